"""`textenvs eval --env-url`: batch evals played on a textenvs service over real sockets."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.other_version import OTHER_VERSION, other_version_service
from textenvs.agents import make_agent
from textenvs.cli import main
from textenvs.evals import run_folder, runner, store
from textenvs.evals.plan import EvalPlan, build_config
from textenvs.service import create_app, remote_env_factory
from textenvs.service.background import serve_in_thread
from textenvs.service.client import VersionMismatch
from textenvs.service.tenancy import ClientLimits

ENV = "treasure-hunt"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_in_thread(create_app(idle_timeout=0)) as base:
        yield base


def evaluate(out: Path, seeds: list[int], concurrency: int, make_env: Any = None) -> list[dict]:
    plan = EvalPlan(envs=[ENV], seeds=seeds, concurrency=concurrency)
    factory = lambda: make_agent("random")  # noqa: E731
    config = build_config(plan, factory(), agent_options={}, prices=None, seeds_spec="t")
    asyncio.run(runner.run_eval(plan, out, factory, config, make_env=make_env))
    return sorted(store.read_episodes(out), key=lambda r: r["seed"])


def turns(out: Path, record: dict) -> list[tuple[str, str, float]]:
    data = json.loads((out / record["trajectory"]).read_text())
    return [(t["observation"], t["command"], t["reward"]) for t in data["turns"]]


def test_remote_eval_plays_the_local_episodes(url: str, tmp_path: Path) -> None:
    seeds = [0, 1, 2, 3, 4]
    local = evaluate(tmp_path / "local", seeds, concurrency=2)
    make = remote_env_factory(url)
    remote = evaluate(tmp_path / "remote", seeds, concurrency=3, make_env=make)
    make.client.close()
    fields = ("seed", "outcome", "success", "return", "steps", "invalid_actions")
    assert [[r[f] for f in fields] for r in remote] == [[r[f] for f in fields] for r in local]
    for a, b in zip(local, remote, strict=True):
        assert turns(tmp_path / "remote", b) == turns(tmp_path / "local", a)
    # every worker deleted its session when it finished
    assert httpx.get(f"{url}/v1/health").json()["sessions"] == 0


def test_remote_steps_do_not_block_the_event_loop(url: str, tmp_path: Path) -> None:
    """Each remote step blocks its thread until another episode's step has started too:
    this only finishes if steps of different episodes are in flight at once."""
    make = remote_env_factory(url)
    in_flight, peak, lock = 0, 0, threading.Lock()
    overlap = threading.Event()

    def make_env(name: str) -> Any:
        env = make(name)
        step = env.step

        def slow_step(command: str) -> Any:
            nonlocal in_flight, peak
            with lock:
                in_flight += 1
                peak = max(peak, in_flight)
                if in_flight >= 2:
                    overlap.set()
            overlap.wait(5)
            try:
                return step(command)
            finally:
                with lock:
                    in_flight -= 1

        env.step = slow_step
        return env

    records = evaluate(tmp_path / "run", [0, 1, 2, 3], concurrency=4, make_env=make_env)
    make.client.close()
    assert len(records) == 4 and all(r["outcome"] != "agent_error" for r in records)
    assert peak >= 2


@pytest.mark.slow
def test_eval_cli_with_env_url(url: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "textenvs.cli", "eval", "--env", ENV, "--agent", "scripted"]
    cmd += ["--seeds", "0-3", "--concurrency", "2", "--out", str(out), "--env-url", url]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    config = json.loads((out / run_folder.CONFIG).read_text())
    assert config["env_url"] == url
    assert set(config["envs"]) == {ENV}
    records = store.read_episodes(out)
    assert sorted(r["seed"] for r in records) == [0, 1, 2, 3]
    assert all(r["outcome"] != "agent_error" for r in records)


def test_eval_cli_with_unreachable_env_url(tmp_path: Path) -> None:
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
        cmd = [sys.executable, "-m", "textenvs.cli", "eval", "--env", ENV, "--agent", "random"]
        cmd += ["--seeds", "0", "--out", str(tmp_path / "run"), "--env-url", dead]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"cannot reach a textenvs service at {dead}" in done.stderr
    assert not (tmp_path / "run" / run_folder.EPISODES).exists()


@pytest.mark.slow
def test_a_killed_remote_eval_resumes_at_once(tmp_path: Path) -> None:
    """kill -9 of `eval --env-url` leaves its sessions open on the service, holding every
    session place of the client; the resume deletes its own leftovers (they carry the
    run's label) instead of waiting 600 s for them to expire."""
    app = create_app(limits=ClientLimits(max_sessions=2), idle_timeout=600)
    with serve_in_thread(app) as url:
        out = tmp_path / "run"
        cmd = [sys.executable, "-m", "textenvs.cli", "eval", "--env", ENV, "--agent", "random"]
        cmd += ["--seeds", "0-39", "--concurrency", "2", "--out", str(out), "--env-url", url]
        first = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(store.read_episodes(out)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert httpx.get(f"{url}/v1/health").json()["sessions"] == 2  # left open
        done = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "closed 2 session(s) the interrupted run left open" in done.stderr
        assert sorted(r["seed"] for r in store.read_episodes(out)) == list(range(40))
        assert all(r["outcome"] != "agent_error" for r in store.read_episodes(out))
        assert httpx.get(f"{url}/v1/health").json()["sessions"] == 0


def test_a_service_of_another_version_stops_the_eval_before_its_first_episode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with other_version_service() as url:
        code = main(["eval", "--env", ENV, "--agent", "random", "--seeds", "0-1",
                     "--env-url", url, "--out", str(out)])  # fmt: skip
    assert code != 0 and not (out / "episodes.jsonl").exists()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"serves {ENV} v{OTHER_VERSION}, this install v" in line
    assert "upgrade textenvs on the client or the server" in line
    with other_version_service() as url, pytest.raises(VersionMismatch):
        remote_env_factory(url)(ENV)  # the env itself refuses too
