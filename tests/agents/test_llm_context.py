"""Any context window: preflight learns the server's context, the budget stays under it,
and a context-length error cuts the history once instead of ending the episode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import textenvs
from benchmarks.support.openai_server import OpenAIServer, text
from tests.agents.llm_support import LongHunt, agent_for, play
from textenvs.agents.llm import context
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.preflight import PreflightError, check_learning, first_prompt_fits
from textenvs.cli import main


@pytest.mark.parametrize(
    ("traits", "window"),
    [
        ({"model_meta": {"max_model_len": 4096}}, 4096),  # vLLM, SGLang
        ({"model_meta": {"meta": {"n_ctx": 8192, "n_ctx_train": 131072}}}, 8192),
        ({"props": {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 4}}, 2048),
        ({"props": {"n_ctx": 6144}}, 6144),
        ({}, None),  # says nothing: the default budget stands
    ],
)
def test_preflight_learns_the_context_window(traits: dict[str, Any], window: int | None) -> None:
    with OpenAIServer(**traits) as server:
        config = LLMConfig(model="test-model", base_url=server.base_url)
        _, learned = check_learning(config)
    assert learned.get("context_window") == window
    budget = LLMConfig(model="m", **learned).resolved_prompt_budget
    if window is None:
        assert budget == 24_000
    else:  # under the window, with room for a reply and the estimate's error
        assert budget == context.budget_under(window, context.DEFAULT_REPLY_ROOM) < window


def test_an_explicit_window_is_not_replaced() -> None:
    with OpenAIServer(model_meta={"max_model_len": 4096}) as server:
        config = LLMConfig(model="test-model", base_url=server.base_url, context_window=9000)
        assert check_learning(config)[1] == {}
    assert config.resolved_prompt_budget == int((9000 - 1024) / context.ESTIMATE_HEADROOM)


@pytest.mark.parametrize(
    ("message", "body", "numbers"),
    [
        (  # vLLM / OpenAI / llama-cpp-python
            "This model's maximum context length is 8192 tokens. However, you requested 8384 "
            "tokens (8288 in the messages, 96 in the completion).",
            None,
            (8192, 8288),
        ),
        (
            "This model's maximum context length is 4096 tokens. However, your messages "
            "resulted in 5000 tokens.",
            None,
            (4096, 5000),
        ),
        (  # llama-server
            "the request exceeds the available context size, try increasing it",
            {
                "error": {
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 5000,
                    "n_ctx": 4096,
                }
            },
            (4096, 5000),
        ),
        ("prompt is too long", None, (None, None)),
    ],
)
def test_overflow_errors_name_their_numbers(
    message: str, body: Any, numbers: tuple[int | None, int | None]
) -> None:
    assert context.numbers_in_error(message, body) == numbers


def test_a_context_error_cuts_the_history_and_the_episode_goes_on() -> None:
    """The server holds 900 words; the agent's budget assumes far more. Each overflow
    shrinks the budget, cuts once and the turn goes again: no agent error."""
    with OpenAIServer(default=text("Action: wait"), context_window=900) as server:
        result = play(agent_for(server, prompt_budget=24_000, max_tokens=20), env=LongHunt())
        statuses = len(server.requests)
    assert result.outcome not in ("agent_error", "context_overflow"), result.error
    assert result.steps == LongHunt.max_steps
    cuts = [c for t in result.turns for c in t.record.get("context_cuts", [])]
    assert 1 <= len(cuts) <= 3, cuts  # learned once (or a few times), not every turn
    assert cuts[0]["limit"] == 900 and cuts[0]["budget"] < 900
    assert result.usage["context_cuts"] == len(cuts)
    assert statuses == LongHunt.max_steps + len(cuts)


def test_when_nothing_is_left_to_cut_the_episode_ends_as_context_overflow() -> None:
    with OpenAIServer(default=text("Action: wait"), context_window=50) as server:
        result = play(agent_for(server), env=LongHunt())
        assert len(server.requests) == 1
    assert result.outcome == "context_overflow" and result.steps == 0


def test_preflight_says_in_one_line_when_the_rules_cannot_fit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = LLMConfig(
        model="m", base_url="http://127.0.0.1:9/v1", context_window=2048, max_tokens=128
    )
    first_prompt_fits(config, "treasure-hunt", None)
    with pytest.raises(PreflightError, match="rules and one observation of megacity"):
        first_prompt_fits(config, "megacity", None)
    with OpenAIServer(model_meta={"max_model_len": 2048}) as server:
        argv = ["eval", "--env", "megacity", "--agent", "llm", "--model", "test-model",
                "--max-tokens", "128", "--base-url", server.base_url, "--seeds", "0",
                "--out", str(tmp_path / "r")]  # fmt: skip
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert server.requests == []  # no episode started
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "megacity" in err[0] and "2,048" in err[0]


@pytest.mark.parametrize("name", [s.name for s in textenvs.SCENARIOS])
def test_every_scenario_fits_4096(name: str) -> None:
    """The rules and one observation of each scenario fit a 4,096-token server."""
    first_prompt_fits(LLMConfig(model="m", base_url="http://x/v1", context_window=4096), name, None)
