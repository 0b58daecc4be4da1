"""The `llm` agent's cache-friendly history: append-only requests until the prompt budget,
one large cut with a recap, bounded prompts, and the cacheable-share measurement.

Every test talks to the real loopback OpenAI-protocol server, which counts a prompt's
tokens as its words (or, for the embedded model's context, as its UTF-8 bytes).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from typing import Any

import numpy as np
import pytest

import textenvs
from benchmarks.support.openai_server import OpenAIServer, RecordedRequest, Reply, text
from tests.agents.llm_support import FAST, LongHunt, agent_for, play
from textenvs.agents.llm import LLMAgent, LLMConfig, local
from textenvs.agents.llm.agent import LOCAL_MAX_TOKENS
from textenvs.agents.llm.history import History, PastTurn, TokenGauge
from textenvs.episodes.loop import context_for
from textenvs.evals.metrics import summarize
from textenvs.evals.records import episode_record


def sent_text(request: RecordedRequest) -> str:
    """A request's messages as the agent measures them (compact JSON), computed here
    independently from what the server received."""
    return json.dumps(request.messages, ensure_ascii=False, separators=(",", ":"))


def extends(before: RecordedRequest, after: RecordedRequest) -> bool:
    return after.messages[: len(before.messages)] == before.messages


def test_requests_append_within_the_budget(server: OpenAIServer) -> None:
    server.default = text("Action: wait")
    env = textenvs.make("treasure-hunt")
    env.max_steps = 12
    result = play(agent_for(server, prompt_budget=100_000), env=env)
    requests = server.requests
    assert len(requests) == 12
    for before, after in itertools.pairwise(requests):
        assert extends(before, after)
        assert len(after.messages) == len(before.messages) + 2  # the reply, the new observation
    assert all(not p["cut"] for t in result.turns for p in t.record["prompts"])
    assert result.turns[-1].record["history_turns"] == 11


def test_one_large_cut_when_the_budget_is_reached(server: OpenAIServer) -> None:
    server.default = text("Action: wait")
    env = LongHunt()
    env.max_steps = 16
    budget = 1400  # words: the system prompt, then about 95 words a turn
    result = play(agent_for(server, prompt_budget=budget, history_keep=0.5), env=env)
    requests = server.requests
    breaks = [i for i in range(1, len(requests)) if not extends(requests[i - 1], requests[i])]
    assert len(breaks) == 1, breaks  # exactly one cut in 16 turns
    (cut,) = breaks
    flags = [p["cut"] for t in result.turns for p in t.record["prompts"]]
    assert flags == [i == cut for i in range(len(requests))]
    # the cut comes when the next prompt would pass the budget, and halves it
    before = requests[cut - 1].body
    assert sum(len((m["content"] or "").split()) for m in before["messages"]) <= budget
    assert result.turns[cut].usage["prompt_tokens"] <= budget // 2
    assert result.turns[cut - 1].usage["prompt_tokens"] > 0.85 * budget
    # the cut turns are replaced by a recap at the start of the first message kept
    first = requests[cut].messages[1]
    assert first["role"] == "user" and first["content"].startswith("Recap of turns 1-")
    dropped = result.turns[cut].record["history_turns"]
    gone = cut - dropped
    assert f"Recap of turns 1-{gone}," in first["content"]
    assert first["content"].count(" wait -> ") == gone
    # the system message never changes
    assert len({json.dumps(r.messages[0]) for r in requests}) == 1


def test_recap_says_what_each_cut_turn_did() -> None:
    history = History(budget=10, keep_fraction=0.0, gauge=TokenGauge(1.0))
    env = textenvs.make("treasure-hunt")
    observation, info = env.reset(seed=3)
    for number, command in enumerate(["east", "fly", "north"], start=1):
        history.note_result(info)
        history.add(PastTurn(number, [{"role": "user", "content": observation}], command))
        observation, _, _, _, info = env.step(command)
    history.note_result(info)
    system = {"role": "system", "content": "rules"}
    messages, cut = history.request(system, [{"role": "user", "content": observation}])
    assert cut and history.turns == [] and len(messages) == 2
    recap = messages[1]["content"].split("\n\n")[0].splitlines()
    assert recap[0].startswith("Recap of turns 1-3,")
    assert recap[1].startswith("1. east -> ") and "move direction=east" in recap[1]
    assert recap[2].startswith("2. fly -> invalid: ")
    assert recap[3].startswith("3. north -> ") and "north" in recap[3]
    # the recap depends only on what was cut: rendering again gives the same text
    again, cut_again = history.request(system, [{"role": "user", "content": "next"}])
    assert not cut_again and again[1]["content"].startswith("\n".join(recap))


def test_prompts_stay_within_the_budget_over_a_40_turn_episode(server: OpenAIServer) -> None:
    server.default = text("I will wait and watch.\nAction: wait")
    budget = 1500
    result = play(agent_for(server, prompt_budget=budget), env=LongHunt())
    assert (result.steps, len(server.requests)) == (40, 40)
    counted = [t.usage["prompt_tokens"] for t in result.turns]
    assert max(counted) <= budget
    assert max(counted[10:]) > 0.85 * budget  # the budget is used, not wasted
    cuts = sum(p["cut"] for t in result.turns for p in t.record["prompts"])
    assert 2 <= cuts <= 8  # rarely: each cut frees half the budget
    share = result.usage["prefix_chars"] / result.usage["prompt_chars"]
    assert share > 0.85


def test_window_policy_moves_the_prompt_start_every_turn(server: OpenAIServer) -> None:
    """The old sliding window, kept as an option, at the same budget: once full, every
    request drops the oldest turn, so little of it repeats the previous request."""
    server.default = text("I will wait and watch.\nAction: wait")
    result = play(
        agent_for(server, prompt_budget=1500, history_policy="window", history=100),
        env=LongHunt(),
    )
    counted = [t.usage["prompt_tokens"] for t in result.turns]
    assert max(counted) <= 1500
    later = result.turns[20:]
    # once full, each request drops old turns or fills the budget (the gauge's estimate
    # errs high, so some requests drop one turn more than the next one does)
    assert all(
        p["cut"] or p["prompt_tokens"] > 0.95 * 1500 for t in later for p in t.record["prompts"]
    )
    # far less repeats than under append (over 85%): the system prompt and, after a
    # request that dropped one turn more, the next one's start
    assert sum(t.usage["prefix_chars"] for t in later) < 0.6 * sum(
        t.usage["prompt_chars"] for t in later
    )


def test_reasks_still_append(server: OpenAIServer) -> None:
    server.script(text("Action: wait"), text("I like turtles"), text("Action: wait"))
    server.default = text("Action: wait")
    env = textenvs.make("treasure-hunt")
    env.max_steps = 4
    result = play(agent_for(server, prompt_budget=100_000, reasks=1), seed=1, env=env)
    assert result.turns[1].reasks == 1
    requests = server.requests
    assert len(requests) == 5
    assert all(extends(a, b) for a, b in itertools.pairwise(requests))
    reask = requests[2].messages
    assert reask[-2] == {"role": "assistant", "content": "I like turtles"}
    assert reask[-1]["content"].startswith("Your command could not be read:")


def test_cacheable_share_is_exact_on_a_scripted_exchange(server: OpenAIServer) -> None:
    cached = {"prompt_tokens": 500, "completion_tokens": 2, "total_tokens": 502}
    server.script(
        text("Action: east"),
        text("I like turtles"),  # re-asked
        Reply(content="Action: north", usage={**cached, "prompt_tokens_details": {"cached_tokens": 321}}),  # noqa: E501
        text("Action: west"),
    )  # fmt: skip
    env = textenvs.make("treasure-hunt")
    env.max_steps = 3
    result = play(agent_for(server, prompt_budget=100_000, reasks=1), seed=1, env=env)
    texts = [sent_text(r) for r in server.requests]
    pairs = itertools.pairwise(texts)
    expected = [0] + [len(os.path.commonprefix(pair)) for pair in pairs]  # noqa: RUF071
    measured = [p for t in result.turns for p in t.record["prompts"]]
    assert [p["chars"] for p in measured] == [len(t) for t in texts]
    assert [p["prefix_chars"] for p in measured] == expected
    # an appended request repeats everything before the previous one's closing bracket
    assert expected[1:] == [len(t) - 1 for t in texts[:-1]]
    assert result.turns[1].usage["prefix_chars"] == expected[1] + expected[2]
    assert result.usage["prompt_chars"] == sum(map(len, texts))
    assert result.usage["cached_tokens"] == 321
    assert measured[2]["cached_tokens"] == 321
    # the episode record and the summary carry them next to the prompt tokens
    record = episode_record(result, ("treasure-hunt", 1, 0), "test-model", "t.json")
    assert record["tokens"]["cached"] == 321
    assert record["prompt_cache"] == {
        "prompt_chars": sum(map(len, texts)),
        "prefix_chars": sum(expected),
    }
    summary = summarize([record, record])
    assert summary["cacheable_share"] == pytest.approx(sum(expected) / sum(map(len, texts)))
    assert summary["tokens"]["cached"] == 642


def byte_count(request: RecordedRequest) -> dict[str, int]:
    """The most tokens any byte-level BPE tokenizer (SmolLM2's included) can make of a
    prompt: one per byte, plus the chat template's role and delimiter tokens."""
    tokens = 3 + sum(
        len((m.get("content") or "").encode()) + len(m["role"]) + 5 for m in request.messages
    )
    return {"prompt_tokens": tokens, "completion_tokens": LOCAL_MAX_TOKENS}


@pytest.mark.parametrize("name", [s.name for s in textenvs.SCENARIOS])
def test_the_embedded_model_context_holds_every_budgeted_prompt(name: str) -> None:
    """The embedded model's server context (sized from its default budget) holds every
    prompt of whole episodes under the default policy, counting tokens as bytes (no
    tokenizer can make more) and with long replies in the history."""
    budget = LLMConfig(model="local").resolved_prompt_budget
    n_ctx = local.context_size(budget, LOCAL_MAX_TOKENS)
    env = textenvs.make(name)
    latest: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    filler = "Let me think about the map and the rules before I choose. " * 6

    def answer(request: RecordedRequest) -> Reply:
        command = env.random_command(latest, rng)
        return Reply(content=f"{filler}\nAction: {command}", usage=byte_count(request))

    with OpenAIServer(default=answer) as server:
        agent = LLMAgent(model="local-like", base_url=server.base_url, prompt_budget=budget, **FAST)

        async def go() -> int:
            turns = 0
            observation, info = env.reset(seed=0)
            agent.reset(context_for(env, 0))
            done = False
            while not done:
                latest.clear()
                latest.update(info)
                decision = await agent.act(observation, info)
                assert decision.outcome is None, decision.error
                observation, _, terminated, truncated, info = env.step(decision.command)
                done, turns = terminated or truncated, turns + 1
            await agent.aclose()
            return turns

        turns = asyncio.run(go())
        counts = [byte_count(r)["prompt_tokens"] for r in server.requests]
    assert turns >= 5
    assert max(counts) + LOCAL_MAX_TOKENS <= n_ctx, (max(counts), n_ctx)


def test_history_settings() -> None:
    assert LLMConfig(model="m").history_policy == "append"
    assert LLMConfig(model="m", history=3).history_policy == "window"  # as before
    assert LLMConfig(model="m", history=3, history_policy="append").history_policy == "append"
    assert (
        LLMConfig(model="local").resolved_prompt_budget
        < LLMConfig(model="m").resolved_prompt_budget
    )
    with pytest.raises(ValueError, match="prompt_budget"):
        LLMConfig(model="m", prompt_budget=0)
