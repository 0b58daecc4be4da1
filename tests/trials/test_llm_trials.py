"""Trial mode with the `llm` agent: one conversation across K episodes.

Every test talks to the real loopback OpenAI-protocol server, which counts a prompt's
tokens as its words.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import textenvs
from benchmarks.support.openai_server import OpenAIServer, RecordedRequest, text, tool_call
from textenvs.agents.llm import LLMAgent
from textenvs.episodes.record import EpisodeResult
from textenvs.evals import run_folder, runner, store
from textenvs.evals.plan import EvalPlan, build_config
from textenvs.evals.trials import play_group
from textenvs.prompts import Mode, prompt_name, system_prompt

FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.02, "read_timeout_s": 5.0}


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-trials")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as srv:
        yield srv


def agent_for(server: OpenAIServer, **options: Any) -> LLMAgent:
    return LLMAgent(model="test-model", base_url=server.base_url, **{**FAST, **options})


def play_trials(
    agent: LLMAgent, env: Any, seeds: list[int], options: dict[str, Any] | None = None
) -> list[EpisodeResult]:
    async def go() -> list[EpisodeResult]:
        try:
            return [r async for r in play_group(env, agent, seeds, options=options)]
        finally:
            await agent.aclose()

    return asyncio.run(go())


def user_texts(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "user"]


def test_the_conversation_carries_across_episodes_with_marker_and_feedback(
    server: OpenAIServer,
) -> None:
    server.default = text("Action: submit")  # each Magnetic Field episode is one turn
    env = textenvs.make("magnetic-field")
    results = play_trials(agent_for(server), env, [3, 4, 5])
    assert [r.steps for r in results] == [1, 1, 1]
    requests = server.requests
    assert len(requests) == 3
    for before, after in itertools.pairwise(requests):
        assert after.messages[: len(before.messages)] == before.messages  # one conversation
    system = requests[0].messages[0]
    # the rules of episodes that follow one another, with the agent's one re-ask
    rules = system_prompt("magnetic-field", Mode(continued=True, reasks=1))
    assert system == {"role": "system", "content": rules}
    assert all(r.messages.count(system) == 1 for r in requests)  # the rules, given once
    first, second, third = user_texts(requests[-1])
    assert first.startswith("=== EPISODE 1 OF 3 ===") and "in this one conversation" in first
    # trial 2 opens with trial 1's end (outcome and final observation), then the marker
    assert second.startswith("EPISODE 1 OF 3 OVER: failure, return ")
    ending, rest = second.split("=== NEW EPISODE: 2 OF 3 ===")
    assert results[0].final_observation in ending
    assert "The message was" in ending and "The true bits of windows 1-18" in ending
    assert results[1].turns[0].observation in rest
    assert "EPISODE 2 OF 3 OVER" in third and "=== NEW EPISODE: 3 OF 3 ===" in third
    # the last command's result of each episode is noted (nothing else calls the agent)
    assert results[0].turns[0].record["messages"][0]["content"] == first


def test_tools_mode_carries_the_conversation_too(server: OpenAIServer) -> None:
    server.default = tool_call({"action": "submit"})
    env = textenvs.make("magnetic-field")
    results = play_trials(agent_for(server, action_mode="tools"), env, [1, 2])
    assert [r.outcome for r in results] == ["failure", "failure"]
    last = server.requests[-1].messages
    roles = [m["role"] for m in last]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert "EPISODE 1 OF 2 OVER" in last[-1]["content"]
    assert "=== NEW EPISODE: 2 OF 2 ===" in last[-1]["content"]
    assert server.requests[-1].body["tools"][0]["function"]["name"] == "act"


def test_a_variant_is_played_with_its_own_rules_text(server: OpenAIServer) -> None:
    server.default = text("Action: mark")
    options = {"withheld": True}
    results = play_trials(agent_for(server), textenvs.make("em-anomaly"), [0, 1], options)
    system = server.requests[0].messages[0]["content"]
    assert prompt_name("em-anomaly", options) == "em-anomaly-withheld"
    assert system == system_prompt("em-anomaly-withheld", Mode(continued=True, reasks=1))
    assert "withheld-knowledge variant" in system and "reads 2 or 3" not in system
    # what the variant reveals at the end reaches the next trial
    assert (
        "steps (Manhattan distance) from the tile you ended on"
        in user_texts(server.requests[-1])[1]
    )
    assert all(r.outcome in ("success", "failure") for r in results)


def test_budget_holds_over_ten_trials(server: OpenAIServer) -> None:
    server.default = text("Action: north")
    env = textenvs.make("em-anomaly")
    env.max_steps = 6  # an instance budget: six turns an episode
    budget = 1200  # words (the server's token count)
    agent = agent_for(server, prompt_budget=budget, history_keep=0.5)
    results = play_trials(agent, env, list(range(10)))
    assert len(results) == 10 and all(r.steps == 6 for r in results)
    counts = [p["prompt_tokens"] for r in results for t in r.turns for p in t.record["prompts"]]
    assert len(counts) == 60
    assert max(counts) <= budget, counts
    assert any(p["cut"] for r in results for t in r.turns for p in t.record["prompts"])
    last = server.requests[-1].messages
    recap = next(m["content"] for m in last if m["role"] == "user")
    # cut episodes are kept as their ends, not their turns
    assert "Recap of earlier episodes" in recap and "EPISODE 1 OF 10 OVER" in recap
    opening = results[9].turns[0].record["messages"][0]["content"]
    assert opening.startswith("EPISODE 9 OF 10 OVER") and "=== NEW EPISODE: 10 OF 10 ===" in opening
    assert "EPISODE 9 OF 10 OVER" in str(last)  # kept in the conversation or the recap


def eval_llm(out: Path, server: OpenAIServer, *, resume: bool = False) -> dict[str, Any]:
    plan = EvalPlan(envs=["magnetic-field"], seeds=list(range(12)), trials=3, concurrency=3)

    def factory() -> LLMAgent:
        return agent_for(server)

    config = build_config(plan, factory(), agent_options={}, prices=None, seeds_spec="t")
    return asyncio.run(runner.run_eval(plan, out, factory, config, resume=resume))


def test_resume_replays_an_unfinished_group_exactly_once(
    tmp_path: Path, server: OpenAIServer
) -> None:
    server.default = text("Action: submit")
    out = tmp_path / "run"
    eval_llm(out, server)
    records = store.read_episodes(out)
    assert len(records) == 12 and len(server.requests) == 12
    assert sorted((r["group"], r["trial"], r["seed"]) for r in records) == [
        (g, t, g + t - 1) for g in (0, 3, 6, 9) for t in (1, 2, 3)
    ]
    # a kill after the second trial of group 3 was recorded, with a torn third line
    kept = [r for r in records if not (r["group"] == 3 and r["trial"] == 3)]
    (out / run_folder.EPISODES).write_text(
        "".join(store.record_line(r).decode() for r in kept) + '{"env":"magnetic-field","se'
    )
    server.clear()
    summary = eval_llm(out, server, resume=True)
    assert summary["complete"] and summary["recorded_episodes"] == 12
    # the group is played again from its first trial, in one conversation, once
    assert len(server.requests) == 3
    assert "=== EPISODE 1 OF 3 ===" in user_texts(server.requests[0])[0]
    final = store.read_episodes(out)
    keys = [(r["seed"], r["episode"]) for r in final]
    assert len(keys) == len(set(keys)) == 12
    moved = [line for line in (out / run_folder.DROPPED).read_text().splitlines() if line]
    assert len(moved) == 2  # the group's two recorded trials, replaced by the replay
