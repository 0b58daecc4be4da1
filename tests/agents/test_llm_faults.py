"""The `llm` agent's fault policy against a real loopback server: exact attempt counts,
outcomes, Retry-After, timeouts, dropped connections, and no API key in any output."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
from typing import Any

import pytest

import textenvs
from benchmarks.support.openai_server import (
    HTTPError,
    OpenAIServer,
    RecordedRequest,
    context_overflow,
    drop,
    http_error,
    rate_limited,
    refusal,
    server_error,
    stall,
    text,
)
from tests.agents.conftest import KEY
from textenvs.agents.llm import LLMAgent
from textenvs.agents.llm import faults as f
from textenvs.episodes.loop import run_episode
from textenvs.episodes.record import EpisodeResult

FAST = {
    "backoff_base_s": 0.01,
    "backoff_max_s": 0.02,
    "connect_timeout_s": 2.0,
    "read_timeout_s": 0.4,
    "total_timeout_s": 5.0,
    "max_attempts": 3,
}


def one_turn(server: OpenAIServer, seed: int = 1, **options: Any) -> EpisodeResult:
    """A one-step episode (Treasure Hunt, budget 1)."""
    agent = LLMAgent(model="test-model", base_url=server.base_url, **{**FAST, **options})
    env = textenvs.make("treasure-hunt")
    env.max_steps = 1

    async def go() -> EpisodeResult:
        try:
            return await run_episode(env, agent, seed)
        finally:
            await agent.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize(
    "fault",
    [server_error(500), server_error(502), server_error(503), http_error(408), rate_limited()],
    ids=["500", "502", "503", "408", "429"],
)
def test_transient_status_is_retried_then_succeeds(server: OpenAIServer, fault: HTTPError) -> None:
    server.script(fault, fault, text("Action: east"))
    result = one_turn(server)
    assert result.outcome != "agent_error" and result.turns[0].command == "east"
    assert len(server.requests) == 3
    record = result.turns[0].record
    assert record["attempts"] == 3 and result.usage["requests"] == 3
    assert [e["attempt"] for e in record["request_errors"]] == [1, 2]
    assert record["request_errors"][0]["error"].startswith(f"HTTP {fault.status}")


def test_attempt_budget_is_finite(server: OpenAIServer) -> None:
    server.script(*[server_error()] * 10)
    result = one_turn(server, max_attempts=4)
    assert (result.outcome, result.steps, len(server.requests)) == ("agent_error", 0, 4)
    assert result.error is not None and "HTTP 500" in result.error
    assert "after 4 attempts" in result.error
    assert server.pending == 6


def test_retry_after_is_honoured(server: OpenAIServer) -> None:
    server.script(rate_limited(retry_after=0.3), text("east"))
    result = one_turn(server, backoff_base_s=0.0, backoff_max_s=0.0)
    (error,) = result.turns[0].record["request_errors"]
    assert error["wait_s"] == pytest.approx(0.3)
    first, second = server.requests
    assert second.received_at - first.received_at >= 0.29


def test_retry_after_is_capped(server: OpenAIServer) -> None:
    server.script(rate_limited(retry_after=3600), text("east"))
    result = one_turn(server, retry_after_max_s=0.05)
    assert result.turns[0].record["request_errors"][0]["wait_s"] == pytest.approx(0.05)


def test_retry_after_header_forms() -> None:
    assert f.retry_after({"retry-after": "2"}) == 2.0
    assert f.retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    date = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert f.retry_after({"retry-after": date}, now=1_000_000.0) == pytest.approx(30.0)
    assert f.retry_after({"retry-after": "soon"}) is None
    assert f.retry_after({}) is None


def test_backoff_grows_with_jitter_and_a_cap() -> None:
    rng = random.Random(0)
    waits = [f.backoff_s(a, base=1.0, cap=8.0, rng=rng) for a in range(1, 7)]
    for attempt, wait in enumerate(waits, start=1):
        ceiling = min(8.0, 2 ** (attempt - 1))
        assert ceiling / 2 <= wait <= ceiling
    assert len(set(waits)) == len(waits)  # jittered


def test_stall_past_the_read_timeout_is_retried(server: OpenAIServer) -> None:
    server.script(stall(10), text("east"))
    result = one_turn(server, read_timeout_s=0.3)
    record = result.turns[0].record
    assert (record["attempts"], len(server.requests)) == (2, 2)
    assert record["request_errors"][0]["error"] == "timed out"
    assert result.turns[0].command == "east"


def test_total_timeout_bounds_a_slow_but_live_reply(server: OpenAIServer) -> None:
    server.script(text("east", latency_s=3.0), text("east"))
    result = one_turn(server, read_timeout_s=10.0, total_timeout_s=0.3)
    record = result.turns[0].record
    assert record["attempts"] == 2
    assert record["request_errors"][0]["error"] == "timed out (total timeout)"


def test_timeouts_use_up_the_budget(server: OpenAIServer) -> None:
    server.script(stall(10), stall(10))
    result = one_turn(server, read_timeout_s=0.2, max_attempts=2)
    assert (result.outcome, len(server.requests)) == ("agent_error", 2)
    assert result.error == "timed out (after 2 attempts)"


def test_dropped_connection_is_retried(server: OpenAIServer) -> None:
    server.script(drop(), text("east"))
    result = one_turn(server)
    record = result.turns[0].record
    assert (record["attempts"], len(server.requests)) == (2, 2)
    assert record["request_errors"][0]["error"].startswith("connection error")


def test_context_length_400_ends_the_episode_without_retry(server: OpenAIServer) -> None:
    server.script(context_overflow(), text("east"))
    result = one_turn(server)
    assert (result.outcome, result.steps, len(server.requests)) == ("context_overflow", 0, 1)
    assert result.error is not None and "maximum context length" in result.error
    assert result.usage["requests"] == 1


def test_context_overflow_is_recognised_by_message_alone(server: OpenAIServer) -> None:
    server.script(http_error(400, "prompt is too long: 9000 tokens > 8192 maximum"))
    assert one_turn(server).outcome == "context_overflow"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_client_errors_are_not_retried(server: OpenAIServer, status: int) -> None:
    server.script(http_error(status, "nope"), text("east"))
    result = one_turn(server)
    assert (result.outcome, len(server.requests)) == ("agent_error", 1)
    assert result.error == f"HTTP {status}: nope (after 1 attempt)"


def test_refusal_is_classified_and_reasked(server: OpenAIServer) -> None:
    server.script(refusal(), text("east"))
    result = one_turn(server)
    turn = result.turns[0]
    assert turn.record["reply_faults"] == ["refusal"] and turn.usage["reply_refusal"] == 1
    assert (turn.command, turn.reasks) == ("east", 1)


def test_missing_key_for_the_default_endpoint_is_an_agent_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    agent = LLMAgent(model="m", api_key_env="MY_UNSET_KEY_VAR")
    result = asyncio.run(run_episode(textenvs.make("treasure-hunt"), agent, 0))
    assert result.outcome == "agent_error" and "MY_UNSET_KEY_VAR" in (result.error or "")


def test_server_that_needs_no_key_gets_a_placeholder(
    server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    server.script(text("east"))
    one_turn(server)
    assert server.requests[0].headers["authorization"] == "Bearer EMPTY"


def test_api_key_never_appears_in_records_logs_config_or_errors(
    server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    def echo_key(request: RecordedRequest) -> Any:
        # a hostile or careless server that echoes the credentials back
        return text(f"your header was {request.headers['authorization']}. Action: east")

    def echo_key_error(request: RecordedRequest) -> Any:
        return http_error(503, f"bad auth {request.headers['authorization']}")

    caplog.set_level(logging.DEBUG)  # includes the openai and httpx loggers
    server.script(echo_key_error, echo_key, echo_key_error, echo_key_error, echo_key_error)
    agent = LLMAgent(model="test-model", base_url=server.base_url, **FAST)
    env = textenvs.make("treasure-hunt")
    env.max_steps = 2

    async def go() -> EpisodeResult:
        try:
            return await run_episode(env, agent, 1)
        finally:
            await agent.aclose()

    result = asyncio.run(go())
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.requests)
    assert len(server.requests) == 5  # 1 retry + reply, then the budget of 3 runs out
    assert result.outcome == "agent_error" and "[redacted]" in (result.error or "")
    assert "[redacted]" in result.turns[0].raw or "[redacted]" in json.dumps(result.turns[0].record)
    outputs = {
        "result": json.dumps(result.to_dict()),
        "config": json.dumps(agent.config()),
        "logs": caplog.text,
        "repr": repr(agent.cfg),
    }
    for name, output in outputs.items():
        assert KEY not in output, f"the API key leaked into {name}"
    assert "retrying" in caplog.text  # the logs were captured at all


def test_think_blocks_are_split_off() -> None:
    assert f.split_think("<think>go south</think>\nAction: north") == (
        "Action: north",
        ["go south"],
    )
    assert f.split_think("<THINK>ran out of bud") == ("", ["ran out of bud"])  # unclosed
    assert f.split_think("mid-thought</think>north") == ("north", ["mid-thought"])
    assert f.split_think("north") == ("north", [])


@pytest.mark.parametrize(
    ("visible", "finish", "reasoning", "refused", "expected"),
    [
        ("north", "stop", False, None, None),
        ("", "stop", False, None, "empty"),
        ("", "length", True, None, "reasoning_exhausted"),
        ("", "length", False, None, "truncated"),
        ("", "content_filter", False, None, "content_filter"),
        ("", "stop", False, "no", "refusal"),
    ],
)
def test_reply_fault_classes(
    visible: str, finish: str, reasoning: bool, refused: str | None, expected: str | None
) -> None:
    got = f.reply_fault(
        visible=visible,
        has_tool_call=False,
        refusal=refused,
        finish_reason=finish,
        reasoning=reasoning,
    )
    assert got == expected


def test_an_unexpected_exception_is_an_agent_error_not_a_crash(
    server: OpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    from textenvs.scenarios.treasure_hunt.env import TreasureHuntEnv

    class BuggyParser(TreasureHuntEnv):
        def parse(self, text: str) -> Any:
            raise RuntimeError(f"parser bug near {KEY}")

    server.script(text("east"))
    agent = LLMAgent(model="test-model", base_url=server.base_url, **FAST)
    result = asyncio.run(run_episode(BuggyParser(), agent, 0))
    assert result.outcome == "agent_error" and result.steps == 0
    assert result.error == "RuntimeError: parser bug near [redacted]"
    assert "Traceback" in caplog.text and KEY not in caplog.text
