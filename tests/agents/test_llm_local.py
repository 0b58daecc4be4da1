"""The embedded model's servers (`local.py`) and the real llama.cpp server.

Tests that start llama-cpp-python's server need the `[local]` extra and skip cleanly
without it (CI installs only `.[dev]`); they play a few turns only, on one thread.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

import textenvs
from textenvs.agents.llm import LLMAgent, local
from textenvs.episodes.loop import run_episode


def needs_llama_cpp() -> Path:
    pytest.importorskip("llama_cpp")
    try:
        return local.gguf_path()
    except local.LocalModelError as exc:
        pytest.skip(str(exc))


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[local.ServerPool]:
    """A fresh pool for the test, its servers stopped after it."""
    fresh = local.ServerPool()
    monkeypatch.setattr(local, "pool", fresh)
    monkeypatch.delenv("OPENAI_API_KEY")
    yield fresh
    for server in fresh._idle:
        server.stop()


def test_the_log_says_what_was_evaluated_and_reused(tmp_path: Path) -> None:
    server = local.LocalServer(tmp_path / "m.gguf")
    lines = [
        "llama_perf_context_print: prompt eval time =  80.00 ms /   34 tokens (...)",
        "Llama.generate: 30 prefix-match hit, remaining 12 prompt tokens to eval",
        "llama_perf_context_print: prompt eval time =  20.00 ms /    12 tokens (...)",
    ]
    Path(server.log_path).write_text("\n".join(lines[:1]) + "\n")
    assert server.take_counts() == {"cached_tokens": 0, "evaluated_tokens": 34}
    with open(server.log_path, "a") as log:
        log.write("\n".join(lines[1:]) + "\n")
    assert server.take_counts() == {"cached_tokens": 30, "evaluated_tokens": 12}
    assert server.take_counts() == {}  # nothing new


def test_threads_are_shared_by_the_planned_servers() -> None:
    pool = local.ServerPool()
    assert pool.threads_each(8) == 8
    pool.plan(3)
    assert pool.threads_each(8) == 2 and pool.threads_each(2) == 1


def test_a_server_that_cannot_start_says_how_it_ended(tmp_path: Path) -> None:
    needs_llama_cpp()
    bogus = tmp_path / "bogus.gguf"
    bogus.write_text("not a model")
    server = local.LocalServer(bogus, n_ctx=512)
    with pytest.raises(local.LocalModelError, match=r"ended \(exit code \d+\); its last log"):
        server.start()


@pytest.mark.slow
def test_episodes_in_flight_get_servers_of_their_own(pool: local.ServerPool) -> None:
    needs_llama_cpp()
    pool.plan(2)
    # leased from a worker thread that then ends (as agents do): the server lives on
    first = asyncio.run(asyncio.to_thread(pool.lease, 2048))
    second = pool.lease(2048)
    try:
        assert first.alive and second.alive and first.port != second.port
        assert first.threads == max(1, (os.cpu_count() or 1) // 2)
    finally:
        pool.release(first)
        pool.release(second)
    assert pool.lease(1024) in (first, second)  # an idle one is reused, not a third


@pytest.mark.slow
def test_a_crashed_server_is_reported_with_its_signal(pool: local.ServerPool) -> None:
    needs_llama_cpp()
    agent = LLMAgent(model="local", max_tokens=8, temperature=0.0, backoff_base_s=0.01)
    env = textenvs.make("treasure-hunt")
    env.max_steps = 2

    async def go() -> str | None:
        await agent._transport._client_for_loop()  # leases the server
        agent._transport.local._process.send_signal(signal.SIGKILL)
        agent._transport.local._process.wait()
        result = await run_episode(env, agent, 0)
        await agent.aclose()
        return result.error

    error = asyncio.run(go()) or ""
    assert "signal SIGKILL" in error and "last log lines" in error


@pytest.mark.slow
def test_json_mode_on_the_embedded_model_reads_every_reply(pool: local.ServerPool) -> None:
    """The embedded default end to end: llama-cpp-python's server, json_object form
    from the first request, every reply read as a command; the cached prompt tokens
    come from its log."""
    needs_llama_cpp()
    # one thread: the machine is shared, and llama.cpp's threads stall each other there
    agent = LLMAgent(model="local", temperature=0.0, seed=0, local_threads=1, read_timeout_s=600)
    assert agent.cfg.mode == "json"
    env = textenvs.make("em-anomaly")
    env.max_steps = 3
    result = asyncio.run(_play(agent, env))
    assert result.outcome != "agent_error", result.error
    assert 1 <= result.steps <= 3 and result.usage["completion_tokens"] > 0
    assert result.reasks == 0 and result.invalid_actions == 0
    errors = [e["error"] for t in result.turns for e in t.record["request_errors"]]
    assert not [e for e in errors if "response_format" in e], errors  # json_object at once
    assert result.turns[-1].usage["cached_tokens"] > 0  # the previous prompt, reused


@pytest.mark.slow
def test_a_small_context_server_cuts_history_and_plays_on(pool: local.ServerPool) -> None:
    """A llama.cpp server of 1,280 tokens that says nothing of its size, and an agent
    that assumes 24,000: the context-length errors cut the history, no agent error."""
    needs_llama_cpp()
    server = local.LocalServer(local.gguf_path(), n_ctx=1280, threads=1)
    base_url = server.start()
    try:
        agent = LLMAgent(model="m", base_url=base_url, api_key_env="NO_KEY", action_mode="json",
                         json_reasoning_chars=0, temperature=0.0, seed=0,
                         read_timeout_s=600)  # fmt: skip
        env = textenvs.make("em-anomaly")
        env.max_steps = 5
        result = asyncio.run(_play(agent, env))
    finally:
        server.stop()
    assert result.outcome not in ("agent_error", "context_overflow"), result.error
    assert result.usage.get("context_cuts", 0) >= 1


async def _play(agent: LLMAgent, env: object) -> object:
    try:
        return await run_episode(env, agent, 0)  # type: ignore[arg-type]
    finally:
        await agent.aclose()
