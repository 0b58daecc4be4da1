"""Runs that meet agent errors: error classes, fail-fast, --retry-errors, the run-folder
lock (with real processes), and envs that cannot be opened."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from benchmarks.support.openai_server import OpenAIServer, RecordedRequest, Reply, text
from textenvs.agents import make_agent
from textenvs.cli import main
from textenvs.episodes.protocol import Agent, Decision
from textenvs.evals import run_folder, runner, store
from textenvs.evals.failures import FailFast, error_class, top_error_classes
from textenvs.evals.metrics import key_of
from textenvs.evals.plan import EvalPlan, build_config
from textenvs.service import create_app, remote_env_factory
from textenvs.service.background import serve_in_thread

ENV = "treasure-hunt"
TEXTENVS = [sys.executable, "-m", "textenvs.cli"]
LOCK_WAIT_S = 240  # how long the lock test waits for a run to start under heavy load


def test_error_classes_drop_what_varies() -> None:
    assert error_class("HTTP 401: Incorrect API key provided: sk-... (after 1 attempt)") == (
        "HTTP 401"
    )
    assert error_class("connection error (ConnectError: [Errno 111]) (after 5 attempts)") == (
        "connection error"
    )
    assert error_class("episode crashed: ConnectError: [Errno 111] refused") == (
        "episode crashed: ConnectError"
    )
    assert error_class("no API key: set the environment variable X") == "no API key"
    assert error_class(None) == "unknown error"
    records = [{"outcome": "agent_error", "error": f"HTTP 50{i % 2}: x"} for i in range(5)]
    records.append({"outcome": "success", "error": None})
    assert top_error_classes(records) == [("HTTP 500", 3), ("HTTP 501", 2)]


def _rec(error: str | None) -> dict[str, Any]:
    return {"outcome": "agent_error" if error else "success", "error": error}


def test_fail_fast_rules() -> None:
    stopper = FailFast(first=3, max_error_rate=1)
    reasons = [stopper.observe(_rec("HTTP 401: a")) for _ in range(3)]
    assert reasons[:2] == [None, None]
    assert reasons[2] == "the first 3 episodes all ended in the same agent error (HTTP 401)"
    mixed = FailFast(first=3, max_error_rate=1)
    assert {mixed.observe(_rec(e)) for e in ("HTTP 401: a", "timed out", "HTTP 401: b")} == {None}
    one_ok = FailFast(first=3, max_error_rate=1)
    assert {one_ok.observe(_rec(e)) for e in (None, "timed out", "timed out")} == {None}
    never = FailFast(first=0, max_error_rate=1)
    assert {never.observe(_rec("timed out")) for _ in range(50)} == {None}
    rate = FailFast(first=0, max_error_rate=0.5)
    reasons = [rate.observe(_rec(None if i < 15 else "timed out")) for i in range(40)]
    # the window of 20 holds 11 errors at episode 26 (15 ok, then errors from 16 on)
    assert reasons.index(next(r for r in reasons if r)) == 25
    assert "11 of the last 20 episodes" in (reasons[25] or "")


class Crashing(Agent):
    name = "crashing"

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        raise ConnectionError("endpoint down")


def _run(out: Path, factory: Any, seeds: int, **options: Any) -> dict[str, Any]:
    plan = EvalPlan(envs=[ENV], seeds=list(range(seeds)), concurrency=2)
    config = build_config(plan, factory(), agent_options={}, prices=None, seeds_spec="t")
    return asyncio.run(runner.run_eval(plan, out, factory, config, **options))


def test_fail_fast_stops_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    summary = _run(tmp_path, Crashing, 40, fail_fast=FailFast(first=5))
    records = store.read_episodes(tmp_path)
    assert (
        "first 5 episodes all ended in the same agent error (ConnectionError)"
        in (summary["stopped"])
    )
    assert 5 <= len(records) < 40 and not summary["complete"]
    assert json.loads((tmp_path / run_folder.SUMMARY).read_text())["stopped"] == summary["stopped"]


def test_retry_errors_replays_only_the_errors_and_keeps_one_line_per_key(tmp_path: Path) -> None:
    class Flaky(Agent):
        """The random agent, behind an endpoint that is down for even seeds."""

        name = "random"  # the same agent identity as the retry's

        def __init__(self) -> None:
            self.inner = make_agent("random")

        def config(self) -> dict[str, Any]:
            return self.inner.config()

        def reset(self, context: Any) -> None:
            super().reset(context)
            self.inner.reset(context)

        async def act(self, observation: str, info: dict[str, Any]) -> Decision:
            if self.context.seed % 2 == 0:
                raise ConnectionError("endpoint down")
            return await self.inner.act(observation, info)

    first = _run(tmp_path, Flaky, 6)
    assert first["by_env"][ENV]["agent_errors"] == 3
    scored = {key_of(r): r for r in store.read_episodes(tmp_path) if r["outcome"] != "agent_error"}
    again = _run(tmp_path, lambda: make_agent("random"), 6, resume=True)
    assert again["by_env"][ENV]["agent_errors"] == 3  # a plain resume keeps them
    final = _run(tmp_path, lambda: make_agent("random"), 6, resume=True, retry_errors=True)
    records = store.read_episodes(tmp_path)
    assert Counter(key_of(r) for r in records) == Counter({(ENV, s, 0): 1 for s in range(6)})
    assert final["by_env"][ENV]["agent_errors"] == 0 and final["complete"]
    for record in records:  # scored episodes were kept as they were, not replayed
        if key_of(record) in scored:
            assert record == scored[key_of(record)]
    dropped = (tmp_path / run_folder.DROPPED).read_text().splitlines()
    assert len(dropped) == 3 and all('"agent_error"' in line for line in dropped)


def test_resume_removes_duplicate_lines(tmp_path: Path) -> None:
    _run(tmp_path, lambda: make_agent("random"), 3)
    path = tmp_path / run_folder.EPISODES
    path.write_bytes(path.read_bytes() * 2)  # what two writers at once used to leave
    summary = _run(tmp_path, lambda: make_agent("random"), 3, resume=True)
    assert summary["recorded_episodes"] == 3 and summary["by_env"]["all"]["episodes"] == 3
    assert len(store.read_episodes(tmp_path)) == 3


def test_an_env_that_cannot_be_opened_fails_its_episodes_not_the_run(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = remote_env_factory(f"http://127.0.0.1:{closed.getsockname()[1]}")
        lost = _run(tmp_path, lambda: make_agent("random"), 4, make_env=dead)
    assert lost["by_env"][ENV]["agent_errors"] == 4
    errors = {r["error"].split(" [")[0] for r in store.read_episodes(tmp_path)}
    assert errors == {"episode crashed: cannot open the env: ConnectError:"}
    with serve_in_thread(create_app(idle_timeout=0)) as url:  # the service is back
        final = _run(
            tmp_path, lambda: make_agent("random"), 4, make_env=remote_env_factory(url),
            resume=True, retry_errors=True,
        )  # fmt: skip
    assert final["complete"] and final["by_env"][ENV]["agent_errors"] == 0


def _eval(out: Path, url: str, *extra: str) -> list[str]:
    cmd = [*TEXTENVS, "eval", "--env", ENV, "--agent", "llm", "--model", "test-model"]
    return [*cmd, "--base-url", url, "--seeds", "0-3", "--concurrency", "2", "--out", str(out)]


@pytest.mark.slow
def test_one_writer_per_run_folder_with_real_processes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # The model holds every reply until `release`: whichever run takes the lock cannot
    # finish (and let the other in) however slowly the other one starts.
    release = threading.Event()

    def held(request: RecordedRequest) -> Reply:
        release.wait(LOCK_WAIT_S)
        return text("Action: wait")

    with OpenAIServer(default=held) as server:
        resume = [*_eval(out, server.base_url), "--resume"]
        procs: list[subprocess.Popen[str]] = []
        try:
            # two resumes started together: one runs, the other exits at once
            for _ in range(2):
                procs.append(subprocess.Popen(resume, stderr=subprocess.PIPE, text=True))
            deadline = time.monotonic() + LOCK_WAIT_S
            while all(p.poll() is None for p in procs) and time.monotonic() < deadline:
                time.sleep(0.05)
            exited = [p for p in procs if p.poll() is not None]
            assert len(exited) == 1, f"{len(exited)} of the two runs exited"
            loser, winner = exited[0], next(p for p in procs if p is not exited[0])
            message = loser.stderr.read() if loser.stderr else ""
            assert loser.returncode == 2, message
            assert f"is in use by another textenvs run (pid {winner.pid} on " in message
            assert "Traceback" not in message
            # the winner is killed: its lock is stale, and the next resume takes it over
            winner.send_signal(signal.SIGKILL)
            winner.wait()
        finally:
            release.set()
            for proc in procs:
                proc.kill()
                proc.wait()
        server.default = text("Action: wait")
        done = subprocess.run(resume, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"took over the lock of an earlier run that did not finish (pid {winner.pid})" in (
        done.stderr
    )
    records = store.read_episodes(out)
    assert Counter(key_of(r) for r in records) == Counter({(ENV, s, 0): 1 for s in range(4)})
    assert (out / run_folder.LOCK).read_text() == ""  # released cleanly


def test_cli_reports_errors_and_stops_early(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        agent = tmp_path / "fast.toml"
        agent.write_text("model = 'm'\nmax_attempts = 1\n")
        cmd = ["eval", "--env", ENV, "--agent", "llm", "--agent-config", str(agent)]
        cmd += ["--base-url", dead, "--no-preflight", "--concurrency", "2"]
        assert main([*cmd, "--seeds", "0-49", "--out", str(tmp_path / "a")]) == 4
        err = capsys.readouterr().err
        assert "stopped early: the first 5 episodes all ended in the same agent error " in err
        assert "connection error" in err and "--resume --retry-errors" in err
        assert len(store.read_episodes(tmp_path / "a")) < 50
        # done, with agent errors
        assert main([*cmd, "--seeds", "0-2", "--out", str(tmp_path / "b")]) == 3
    err = capsys.readouterr().err
    assert "3 episode(s) ended in agent errors; most frequent:" in err
    assert "    3  connection error" in err
