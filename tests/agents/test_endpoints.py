"""Several endpoints for one model: least-loaded dispatch and fail-over, against real
loopback servers (one of them down or failing)."""

from __future__ import annotations

import asyncio
import functools
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.support.openai_server import OpenAIServer, server_error, text
from textenvs.agents import make_agent
from textenvs.agents.llm.config import NODE_IP_ENV, LLMConfig
from textenvs.agents.llm.endpoints import EndpointPool
from textenvs.evals import runner, store
from textenvs.evals.plan import EvalPlan, build_config

ENV = "treasure-hunt"
WAIT = text("Action: wait", latency_s=0.02)  # valid every turn: 30 requests an episode


def dead_url() -> str:
    """A loopback port nobody listens on (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def run(out: Path, urls: list[str], concurrency: int = 4, seeds: int = 4) -> dict[str, Any]:
    cfg = LLMConfig(model="test-model", base_urls=urls, max_attempts=3, backoff_base_s=0.01)
    plan = EvalPlan(envs=[ENV], seeds=list(range(seeds)), concurrency=concurrency)
    factory = functools.partial(make_agent, "llm", config=cfg)
    config = build_config(plan, factory(), agent_options={}, prices=None, seeds_spec="t")
    return asyncio.run(runner.run_eval(plan, out, factory, config))


def test_requests_go_to_the_least_loaded_endpoint(tmp_path: Path) -> None:
    slow_reply = text("Action: wait", latency_s=0.15)
    with OpenAIServer(default=slow_reply) as slow, OpenAIServer(default=WAIT) as fast:
        summary = run(tmp_path, [slow.base_url, fast.base_url])
        served = (len(slow.requests), len(fast.requests))
    assert summary["complete"] and summary["by_env"][ENV]["agent_errors"] == 0
    assert sum(served) == 4 * 30
    # the slow server holds its requests longer and loses ties to the faster one, so it
    # takes only the overflow: round-robin would split them evenly
    assert served[1] > 2 * served[0] > 0, served


def test_a_tie_goes_to_the_endpoint_that_answered_faster() -> None:
    pool = EndpointPool(["http://slow/v1", "http://fast/v1"])
    slow, fast = pool.endpoints
    for endpoint, took_s in ((slow, 0.9), (fast, 0.1)):
        assert pool.pick([e for e in pool.endpoints if e is not endpoint]) is endpoint
        pool.done(endpoint, ok=True, took_s=took_s)
    assert pool.pick() is fast  # both idle: the faster one
    assert pool.pick() is slow  # the faster one is busy: fewest in flight first
    pool.done(fast, ok=True, took_s=5.0)  # it slowed down: its average follows
    pool.done(slow, ok=True, took_s=0.9)
    assert fast.latency_s == pytest.approx(0.1 + 0.2 * (5.0 - 0.1))
    assert pool.pick() is slow


def test_a_refused_endpoint_is_failed_over_and_cooled_off(tmp_path: Path) -> None:
    with OpenAIServer(default=WAIT) as live:
        summary = run(tmp_path, [dead_url(), live.base_url])
        served = len(live.requests)
    assert summary["complete"] and summary["by_env"][ENV]["agent_errors"] == 0
    assert served == 4 * 30  # every request answered by the live one
    outcomes = {r["outcome"] for r in store.read_episodes(tmp_path)}
    assert outcomes == {"timeout"}  # every episode played its 30 steps of `wait`


def test_an_endpoint_answering_5xx_is_failed_over(tmp_path: Path) -> None:
    with OpenAIServer(default=server_error(503)) as sick, OpenAIServer(default=WAIT) as well:
        summary = run(tmp_path, [sick.base_url, well.base_url])
        tried_sick, served = len(sick.requests), len(well.requests)
    assert summary["by_env"][ENV]["agent_errors"] == 0 and served == 4 * 30
    # marked down after each failure (2 s, doubling): tried a few times, not every turn
    assert 1 <= tried_sick <= 12, tried_sick


def test_every_endpoint_down_is_an_agent_error(tmp_path: Path) -> None:
    summary = run(tmp_path, [dead_url(), dead_url()], concurrency=1, seeds=1)
    record = store.read_episodes(tmp_path)[0]
    assert summary["by_env"][ENV]["agent_errors"] == 1
    assert "connection error" in record["error"] and "after 3 attempts" in record["error"]


def test_node_ip_is_filled_in_where_the_agent_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = LLMConfig(model="m", base_url="http://{node_ip}:8000/v1")
    assert cfg.resolved_base_url() == "http://127.0.0.1:8000/v1"
    monkeypatch.setenv(NODE_IP_ENV, "10.1.2.3")
    assert cfg.resolved_base_url() == "http://10.1.2.3:8000/v1"
    assert cfg.public()["base_url"] == "http://{node_ip}:8000/v1"  # recorded as written
    with pytest.raises(ValueError, match="not both"):
        LLMConfig(model="m", base_url="http://a/v1", base_urls=["http://b/v1", "http://c/v1"])


@pytest.mark.slow
def test_cli_takes_a_file_of_urls_and_names_the_one_down(tmp_path: Path) -> None:
    with OpenAIServer(default=WAIT) as live:
        urls = tmp_path / "urls.txt"
        urls.write_text(f"# the model's servers\n{live.base_url}\n{dead_url()}  # node 2\n")
        out = tmp_path / "run"
        done = subprocess.run(
            [sys.executable, "-m", "textenvs.cli", "eval", "--env", ENV, "--agent", "llm",
             "--model", "test-model", "--base-urls", str(urls), "--seeds", "0-1",
             "--out", str(out)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "1 of 2 endpoints answered; not answering: the endpoint" in done.stderr
    config = store.read_config(out)
    assert config is not None and len(config["agent"]["base_urls"]) == 2


class ReplyWeRelease:
    """Stands in for the OpenAI client's `post`: its reply lands when the test says."""

    def __init__(self) -> None:
        self.reply: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def post(self, *args: Any, **kwargs: Any) -> asyncio.Future[str]:
        return self.reply


@pytest.mark.parametrize("passes", [0, 1, 2, 3])
def test_a_cancel_that_lands_with_the_reply_is_never_swallowed(passes: int) -> None:
    """Ctrl-C cancels every call in flight; a call whose reply lands in the same loop pass
    must still end cancelled (3.11's `asyncio.wait_for` returned the reply instead, and
    that episode's worker played the rest of the run)."""
    from textenvs.agents.llm.endpoints import complete

    async def main() -> None:
        client = ReplyWeRelease()
        call = asyncio.create_task(complete(client, {}, LLMConfig(model="m")))  # type: ignore[arg-type]
        await asyncio.sleep(0)  # the call now waits for its reply
        client.reply.set_result("the reply")
        for _ in range(passes):
            await asyncio.sleep(0)
        if call.cancel():  # accepted: the call had not finished
            with pytest.raises(asyncio.CancelledError):
                await call
        else:
            assert await call == "the reply"

    asyncio.run(main())
