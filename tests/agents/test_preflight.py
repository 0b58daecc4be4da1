"""The preflight check before LLM runs: against the loopback OpenAI server, a closed port,
and as `textenvs eval` / `textenvs run` subprocesses (one line, exit 2, no run started)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.conftest import KEY
from tests.support.openai_server import OpenAIServer, http_error, server_error, text
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.preflight import PreflightError, check

TEXTENVS = [sys.executable, "-m", "textenvs.cli"]


@pytest.fixture
def dead_url() -> Iterator[str]:
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{closed.getsockname()[1]}/v1"


def test_a_listed_model_needs_no_completion(server: OpenAIServer) -> None:
    assert "lists model 'test-model'" in check(
        LLMConfig(model="test-model", base_url=server.base_url)
    )
    assert server.requests == []  # the models list was enough


def test_an_unlisted_model_costs_one_token(server: OpenAIServer) -> None:
    server.script(text("ready"))
    cfg = LLMConfig(model="other", base_url=server.base_url, extra_body={"top_k": 3})
    assert "answered model 'other'" in check(cfg)
    (request,) = server.requests
    assert request.body["max_tokens"] == 1 and request.body["top_k"] == 3
    reasoning = cfg.model_copy(update={"max_tokens_field": "max_completion_tokens"})
    server.script(text("ready"))
    check(reasoning)
    assert server.requests[-1].body["max_completion_tokens"] == 1


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        (http_error(404, "model 'other' does not exist"), "refused model 'other' (HTTP 404"),
        (http_error(401, "Incorrect API key"), "rejected the API key (HTTP 401"),
        (http_error(400, "unknown field top_q"), "--extra-body"),
    ],
)
def test_refusals_name_what_to_fix(server: OpenAIServer, behaviour: object, expected: str) -> None:
    server.script(behaviour)
    with pytest.raises(PreflightError) as caught:
        check(LLMConfig(model="other", base_url=server.base_url))
    message = str(caught.value)
    assert expected in message and "\n" not in message and KEY not in message
    if "404" in expected:
        assert "check --model and --base-url; the endpoint lists: test-model" in message
    if "401" in expected:
        assert "$OPENAI_API_KEY" in message


def test_busy_server_is_retried_briefly_then_reported(server: OpenAIServer) -> None:
    server.script(server_error(503), text("ready"))
    check(LLMConfig(model="other", base_url=server.base_url))
    server.script(*[server_error(503)] * 3)
    with pytest.raises(PreflightError, match="not serving requests now"):
        check(LLMConfig(model="other", base_url=server.base_url))


def test_unreachable_endpoint_and_missing_key(
    dead_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(
        PreflightError, match=r"cannot be reached \(ConnectError\): check --base-url"
    ):
        check(LLMConfig(model="m", base_url=dead_url))
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(PreflightError, match="no API key: set the environment variable MY_KEY"):
        check(LLMConfig(model="m", api_key_env="MY_KEY"))


def _cli(
    *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run([*TEXTENVS, *args], capture_output=True, text=True, timeout=120, env=env)
    return done, time.monotonic() - started


def test_cli_stops_at_once_with_one_line(dead_url: str, tmp_path: Path) -> None:
    no_key = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    evaluate = ["eval", "--env", "all", "--agent", "llm", "--model", "gpt-4o-mini"]
    evaluate += ["--seeds", "0-99", "--out", str(tmp_path / "nokey")]
    done, _ = _cli(*evaluate, env=no_key)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "textenvs eval: error: preflight: no API key: set the environment variable "
        "OPENAI_API_KEY (or give --base-url for a server that needs none)"
    ]
    assert not (tmp_path / "nokey").exists()  # nothing was started

    evaluate = ["eval", "--env", "all", "--agent", "llm", "--model", "m", "--seeds", "0-99"]
    done, took = _cli(*evaluate, "--base-url", dead_url, "--out", str(tmp_path / "typo"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert f"the endpoint {dead_url} cannot be reached" in done.stderr
    assert took < 30  # one refused connection, not 500 episodes of retries

    run = ["run", "treasure-hunt", "--seed", "0", "--agent", "llm", "--model", "m"]
    done, _ = _cli(*run, "--base-url", dead_url)
    assert done.returncode == 2 and "textenvs run: error: preflight: the endpoint" in done.stderr
    assert "Outcome" not in done.stdout  # no episode was played


def test_no_preflight_skips_the_check(dead_url: str, tmp_path: Path) -> None:
    run = ["run", "treasure-hunt", "--seed", "0", "--agent", "llm", "--model", "m"]
    done, _ = _cli(
        *run, "--base-url", dead_url, "--no-preflight", "--agent-config", _fast(tmp_path)
    )
    assert done.returncode == 3  # played, and the episode ended in an agent error
    assert "Outcome: agent_error" in done.stdout and "connection error" in done.stdout


def _fast(tmp_path: Path) -> str:
    """An agent file with a fast retry budget (the CLI has no flags for it)."""
    path = tmp_path / "fast.toml"
    path.write_text("model = 'm'\nmax_attempts = 2\nbackoff_base_s = 0.01\n")
    return str(path)
