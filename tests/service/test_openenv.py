"""OpenEnv's own client (`openenv-core`) plays every scenario on the service over its
WebSocket session protocol: same seed, same episode as local play."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest

import textenvs
from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread

openenv_core = pytest.importorskip("openenv.core")
GenericEnvClient = openenv_core.GenericEnvClient

ENV_NAMES = textenvs.names()
TOKEN = "openenv-test-token-0123456789"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_in_thread(create_app(max_sessions=50)) as base:
        yield base


def jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value))


def local_episode(env_name: str, seed: int) -> list[tuple[str, str, float, bool]]:
    """(command, observation, reward, done) per step of a random-command episode, and the
    reset observation first, played on a local env."""
    env = textenvs.make(env_name)
    text, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    steps = [("", text, 0.0, False)]
    done = False
    while not done:
        command = env.random_command(info, rng)
        text, reward, terminated, truncated, info = env.step(command)
        done = terminated or truncated
        steps.append((command, text, float(reward), done))
    return steps


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_openenv_client_plays_a_full_episode_like_local_play(url: str, env_name: str) -> None:
    seed = 11
    expected = local_episode(env_name, seed)
    with GenericEnvClient(base_url=f"{url}/openenv/{env_name}").sync() as env:
        result = env.reset(seed=seed)
        assert result.observation["text"] == expected[0][1] and result.done is False
        for command, text, reward, done in expected[1:]:
            result = env.step({"command": command})
            assert result.observation["text"] == text
            assert result.reward == pytest.approx(reward) and result.done is done
        state = env.state()
        assert state["seed"] == seed and state["done"] is True
        assert state["step_count"] == len(expected) - 1
        # The session is still there: a new episode on another seed, also honoured.
        local = textenvs.make(env_name)
        text, info = local.reset(seed=seed + 1)
        result = env.reset(seed=seed + 1)
        assert result.observation["text"] == text
        assert result.observation["info"] == jsonable(info)
    # Closing the socket deleted the session.
    assert httpx.get(f"{url}/v1/health").json()["sessions"] == 0


def test_http_forms_health_metadata_schema_and_stateless_reset(url: str) -> None:
    base = f"{url}/openenv/{ENV_NAMES[0]}"
    assert httpx.get(f"{base}/health").json() == {"status": "healthy"}
    meta = httpx.get(f"{base}/metadata").json()
    assert meta["name"] == ENV_NAMES[0] and meta["version"] == str(
        textenvs.make(ENV_NAMES[0]).version
    )
    schema = httpx.get(f"{base}/schema").json()
    assert set(schema) == {"action", "observation", "state"}
    assert set(schema["action"]["properties"]) == {"command", "action"}
    text, _ = textenvs.make(ENV_NAMES[0]).reset(seed=5)
    reset = httpx.post(f"{base}/reset", json={"seed": 5}).json()
    assert reset["observation"]["text"] == text and reset["done"] is False
    step = httpx.post(f"{base}/step", json={"action": {"command": "n"}})
    assert step.status_code == 409 and "/ws" in step.json()["error"]["message"]
    assert httpx.get(f"{url}/openenv/nope/health").status_code == 404
    bad_seed = httpx.post(f"{base}/reset", json={"seed": "5"})
    assert bad_seed.status_code == 422


def test_bad_messages_are_errors_and_the_session_goes_on(url: str) -> None:
    client = GenericEnvClient(base_url=f"{url}/openenv/{ENV_NAMES[0]}").sync()
    with client as env:
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.reset(seed=True)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"command": "n", "action": {}})
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.reset(seed=1, options={"level": float("inf")})
        result = env.reset(seed=2)
        assert result.observation["text"] == textenvs.make(ENV_NAMES[0]).reset(seed=2)[0]


def test_tokens_reach_openenv_sessions_through_the_url() -> None:
    app = create_app(tokens={"alice": TOKEN})
    with serve_in_thread(app) as base:
        host = base.removeprefix("http://")
        with pytest.raises(ConnectionError):
            GenericEnvClient(base_url=f"{base}/openenv/{ENV_NAMES[0]}").sync().connect()
        wrong = f"http://alice:{'x' * 20}@{host}/openenv/{ENV_NAMES[0]}"
        with pytest.raises(ConnectionError):
            GenericEnvClient(base_url=wrong).sync().connect()
        good = f"http://alice:{TOKEN}@{host}/openenv/{ENV_NAMES[0]}"
        with GenericEnvClient(base_url=good).sync() as env:
            assert env.reset(seed=1).observation["text"]
            health = httpx.get(f"{base}/v1/health", headers={"Authorization": f"Bearer {TOKEN}"})
            assert health.json()["sessions"] == 1


def test_idle_openenv_session_expires_and_frees_its_slot() -> None:
    with serve_in_thread(create_app(idle_timeout=0.5)) as base:
        client = GenericEnvClient(base_url=f"{base}/openenv/{ENV_NAMES[0]}").sync()
        with client as env:
            env.reset(seed=1)
            assert httpx.get(f"{base}/v1/health").json()["sessions"] == 1
            time.sleep(1.5)  # no step or reset: the server ends the session
            assert httpx.get(f"{base}/v1/health").json()["sessions"] == 0
            with pytest.raises(Exception, match=r"expired|closed|1000"):
                env.step({"command": "north"})


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_openenv_validate_passes_for_every_scenario(url: str, env_name: str) -> None:
    from openenv.cli._validation import validate_running_environment

    report = validate_running_environment(f"{url}/openenv/{env_name}")
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert report["passed"] and not failed, failed
    assert report["mode"] == "simulation" and report["standard_profile"] == "openenv-http/1.x"
    assert len(report["criteria"]) == 6


@pytest.mark.slow
def test_openenv_validate_cli_and_the_mcp_endpoint(url: str) -> None:
    import subprocess
    import sys
    from pathlib import Path

    cli = Path(sys.executable).parent / "openenv"
    base = f"{url}/openenv/{ENV_NAMES[0]}"
    run = subprocess.run([str(cli), "validate", "--url", base], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["passed"] is True
    # an unknown scenario fails validation (in-process: each CLI start imports gradio)
    from openenv.cli._validation import validate_running_environment

    assert validate_running_environment(f"{url}/openenv/nowhere")["passed"] is False
    paths = httpx.get(f"{base}/openapi.json").json()["paths"]
    assert {"/reset", "/step", "/state", "/health", "/metadata", "/schema"} <= set(paths)
    assert all(p.get("name") != "env" for op in paths["/reset"].values()
               for p in op.get("parameters", []))  # fmt: skip
    rpc = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
    assert rpc.json() == {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}
    init = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize"})
    assert init.json()["result"]["serverInfo"]["name"] == f"textenvs-{ENV_NAMES[0]}"
    unknown = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "nope"})
    assert unknown.status_code == 200 and unknown.json()["error"]["code"] == -32601
    garbage = httpx.post(f"{base}/mcp", content=b"{not json")
    assert garbage.json()["error"]["code"] == -32700


def test_typed_client_plays_with_models(url: str) -> None:
    from textenvs.service.openenv_client import (
        TextenvsAction,
        TextenvsEnv,
        TextenvsObservation,
        TextenvsState,
    )

    env_name = "em-anomaly"
    expected = local_episode(env_name, 4)
    with TextenvsEnv.for_scenario(url, env_name).sync() as env:
        result = env.reset(seed=4)
        assert isinstance(result.observation, TextenvsObservation)
        assert result.observation.text == expected[0][1]
        for command, text, reward, done in expected[1:]:
            result = env.step(TextenvsAction(command=command))
            assert result.observation.text == text and result.done is done
            assert result.observation.reward == pytest.approx(reward)
        state = env.state()
        assert isinstance(state, TextenvsState)
        assert (state.env, state.seed, state.done) == (env_name, 4, True)
        assert state.step_count == len(expected) - 1
        # a structured action, as the scenario's action schema has it
        env.reset(seed=5)
        local = textenvs.make(env_name)
        local.reset(seed=5)
        action = local.action_schema(action="rotate left").model_dump(mode="json")
        text, *_ = local.step(local.command_for(action))
        assert env.step(TextenvsAction(action=action)).observation.text == text
    with pytest.raises(ValueError, match="exactly one"):
        TextenvsAction()
    with pytest.raises(ValueError, match="exactly one"):
        TextenvsAction(command="n", action={})


def test_manifest_names_the_app_factory() -> None:
    import importlib
    from pathlib import Path

    import yaml

    manifest = yaml.safe_load((Path(__file__).parents[2] / "openenv.yaml").read_text())
    assert manifest["spec_version"] == 1 and manifest["runtime"] == "fastapi"
    module, _, factory = manifest["app"].partition(":")
    app = getattr(importlib.import_module(module), factory)()
    paths = set(app.openapi()["paths"])
    assert {"/openenv/{env}/reset", "/openenv/{env}/step", "/openenv/{env}/state"} <= paths
