"""`--backend ray` on a real local Ray cluster: the same results as the local backend,
every (env, seed, episode) exactly once, also when an actor is killed mid-run."""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

import ray

from benchmarks.support.openai_server import OpenAIServer, RecordedRequest, Reply, text
from benchmarks.support.ray_cluster import LocalCluster
from textenvs.agents import make_agent
from textenvs.agents.llm.config import NODE_IP_ENV, LLMConfig
from textenvs.evals import run_folder, runner, store
from textenvs.evals.metrics import key_of
from textenvs.evals.plan import EvalPlan, build_config
from textenvs.evals.ray_backend import RayBackend

ENV = "treasure-hunt"
TEXTENVS = [sys.executable, "-m", "textenvs.cli"]
TIMING = ("latency_s", "wall_s")  # the only fields that may differ between two runs
MOVES = ("north", "east", "south", "west", "reveal")
KEY_ENV = "TEXTENVS_RAY_TEST_KEY"  # unset here: only the actors get it, from the driver


def comparable(run_dir: Path) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Every record by key, timing left out; fails if a key appears twice."""
    records = store.read_episodes(run_dir)
    keys = Counter(key_of(r) for r in records)
    assert max(keys.values()) == 1, f"recorded twice: {[k for k, n in keys.items() if n > 1]}"
    return {key_of(r): {k: v for k, v in r.items() if k not in TIMING} for r in records}


def cli_eval(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [*TEXTENVS, "eval", "--env", ENV, "--out", str(out), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_scripted_eval_and_resume_through_the_cli(cluster: LocalCluster, tmp_path: Path) -> None:
    common = ("--agent", "scripted", "--seeds", "0-9", "--concurrency", "4")
    local = cli_eval(tmp_path / "local", *common)
    assert local.returncode == 0, local.stderr
    on_ray = tmp_path / "ray"
    ray_args = ("--backend", "ray", "--ray-address", cluster.address)
    first = cli_eval(on_ray, *common, *ray_args)
    assert first.returncode == 0, first.stderr
    assert "2 actor(s) on 1 node(s)" in first.stderr
    assert comparable(on_ray) == comparable(tmp_path / "local")
    assert "treasure-hunt" in first.stdout  # the results table, printed by the driver

    # A killed driver: four episodes kept, the fifth torn. --resume plays the rest on Ray.
    path = on_ray / run_folder.EPISODES
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:4]) + lines[4][:30])
    resumed = cli_eval(on_ray, *common, *ray_args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming: 4 of 10 episodes already recorded" in resumed.stderr
    assert comparable(on_ray) == comparable(tmp_path / "local")
    assert len(list((on_ray / run_folder.TRAJECTORIES).glob("*.json"))) == 10


def reply(request: RecordedRequest) -> Reply:
    """A command that depends only on the conversation so far: deterministic episodes."""
    turns = sum(1 for m in request.messages if m["role"] == "user")
    return text(f"Action: {MOVES[turns % len(MOVES)]}", latency_s=0.03)


def run_llm_eval(out: Path, base_url: str, seeds: list[int], backend: Any = None) -> dict[str, Any]:
    plan = EvalPlan(envs=[ENV], seeds=seeds, concurrency=4)
    factory = functools.partial(make_agent, "llm", config=llm_config(base_url))
    config = build_config(plan, factory(), agent_options={}, prices=None, seeds_spec="t")
    return asyncio.run(runner.run_eval(plan, out, factory, config, backend=backend))


def llm_config(base_url: str) -> LLMConfig:
    return LLMConfig(model="test-model", base_url=base_url, api_key_env=KEY_ENV)


@pytest.mark.slow
def test_llm_eval_survives_a_killed_actor(cluster: LocalCluster, tmp_path: Path) -> None:
    seeds = list(range(12))
    with OpenAIServer(default=reply) as server:
        # the model server "on each node". Ray names this node by its interface address
        # whatever --node-ip-address says, and the server listens on loopback only: the
        # actors are told so (a $TEXTENVS_NODE_IP on a node wins over Ray's address).
        url = f"http://{{node_ip}}:{server.port}/v1"
        local = run_llm_eval(tmp_path / "local", url, seeds)
        assert local["complete"] and local["by_env"][ENV]["agent_errors"] == 0
        asked_locally = len(server.requests)

        plan = EvalPlan(envs=[ENV], seeds=seeds, concurrency=4)
        factory = functools.partial(make_agent, "llm", config=llm_config(url))
        notes: list[str] = []
        backend = RayBackend(plan, factory, address=cluster.address, on_note=notes.append,
                             env_vars={KEY_ENV: "sk-forwarded-to-actors",
                                       NODE_IP_ENV: "127.0.0.1"})  # fmt: skip
        backend.start()
        backend.preflight()  # the endpoint, checked from each actor
        places = backend.places()
        assert {node for node, _ in places} <= {n["NodeManagerAddress"] for n in ray.nodes()}
        victim = places[0][1]
        episodes = tmp_path / "ray" / run_folder.EPISODES
        killed = threading.Event()

        def kill_when_started() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if episodes.exists() and episodes.read_bytes().count(b"\n") >= 2:
                    os.kill(victim, signal.SIGKILL)  # an actor of the cluster we started
                    killed.set()
                    return
                time.sleep(0.05)

        killer = threading.Thread(target=kill_when_started, daemon=True)
        killer.start()
        try:
            summary = run_llm_eval(tmp_path / "ray", url, seeds, backend)
        finally:
            backend.stop()
        killer.join(timeout=5)
        keys_sent = {r.headers.get("authorization") for r in server.requests[asked_locally:]}

    assert killed.is_set(), "the eval ended before the actor could be killed"
    assert backend.reruns >= 1 and any("was lost" in note for note in notes), notes
    assert summary["complete"] and summary["by_env"][ENV]["agent_errors"] == 0
    assert comparable(tmp_path / "ray") == comparable(tmp_path / "local")
    assert set(comparable(tmp_path / "ray")) == {(ENV, s, 0) for s in seeds}
    assert keys_sent == {"Bearer sk-forwarded-to-actors"}  # env_vars reached the actors


@pytest.mark.slow
def test_an_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    from benchmarks.support.ray_cluster import free_port

    done = cli_eval(tmp_path / "run", "--agent", "random", "--seeds", "0", "--backend", "ray",
                    "--ray-address", f"127.0.0.1:{free_port()}")  # fmt: skip
    assert done.returncode == 2
    assert "cannot reach the Ray cluster at 127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "run").exists()


@pytest.mark.slow
def test_the_benchmark_runs(cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import ray_backend

    argv = ["--ray-address", cluster.address, "--concurrency", "2", "--rounds", "1",
            "--scripted", "8", "--latency", "0.01"]  # fmt: skip
    assert ray_backend.main(argv) == 0
    out = capsys.readouterr().out
    assert "ray/local" in out and out.count("\nllm ") == 1 and "\nscripted " in out
