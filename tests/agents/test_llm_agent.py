"""The `llm` agent's conversation: prompts, reasoning, re-asks, tools, bounded history.

Every test talks to a real HTTP server on loopback (benchmarks/support/openai_server.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest

import textenvs
from benchmarks.support.openai_server import (
    OpenAIServer,
    empty,
    text,
    think,
    tool_call,
)
from tests.agents.conftest import KEY
from tests.agents.llm_support import LongHunt, agent_for, play
from textenvs.agents.llm import LLMAgent
from textenvs.agents.llm.agent import request_seed
from textenvs.evals import runner
from textenvs.evals.plan import EvalPlan, build_config
from textenvs.prompts import Mode, system_prompt


def test_text_mode_prompt_and_request_fields(server: OpenAIServer) -> None:
    server.script(text("I'll head east.\nAction: east"), text("Action: west"), text("north"))
    agent = agent_for(
        server, temperature=0.2, max_tokens=64, seed=7, reasoning_effort="low",
        extra_body={"top_k": 20}, history=8,
    )  # fmt: skip
    env = textenvs.make("treasure-hunt")
    env.max_steps = 3  # three turns, then the budget ends the episode
    result = play(agent, seed=1, env=env)
    assert [t.command for t in result.turns] == ["east", "west", "north"]
    assert result.outcome in ("timeout", "failure", "success")
    first, second = server.requests[0], server.requests[1]
    assert first.messages == [
        {"role": "system", "content": system_prompt("treasure-hunt", Mode(reasks=1))},
        {"role": "user", "content": result.turns[0].observation},
    ]
    assert first.headers["authorization"] == f"Bearer {KEY}"  # the key is really sent
    body = first.body
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("test-model", 0.2, 64)
    # each request its own seed, derived from the configured one, the episode and its place
    seeds = [request.body["seed"] for request in server.requests]
    assert seeds[0] == request_seed(7, agent.context, 0) and len(set(seeds)) == len(seeds)
    assert body["reasoning_effort"] == "low" and body["top_k"] == 20
    assert "tools" not in body
    # the history replays the previous turn (visible text only)
    assert second.messages[1:] == [
        {"role": "user", "content": result.turns[0].observation},
        {"role": "assistant", "content": "I'll head east.\nAction: east"},
        {"role": "user", "content": result.turns[1].observation},
    ]
    turn = result.turns[0]
    assert turn.raw == "I'll head east.\nAction: east"
    assert turn.record["system"] == first.messages[0]["content"]
    assert turn.record["attempts"] == 1 and turn.usage["requests"] == 1
    assert turn.usage["prompt_tokens"] > 0 and turn.usage["completion_tokens"] == 5
    assert "system" not in result.turns[1].record
    json.dumps(result.to_dict())  # the whole trajectory is JSON-able


def test_a_seeds_episodes_are_sampled_with_seeds_of_their_own(
    server: OpenAIServer, tmp_path: Any
) -> None:
    """`--episodes-per-seed 2 --llm-seed N`: the two episodes of a seed send different
    request seeds (else a sampling run's repeats would be one episode twice), and the
    first keeps the seeds it had before repeats counted (published runs replay)."""
    server.default = text("Action: mark")  # ends the episode: one request each
    plan = EvalPlan(envs=["em-anomaly"], seeds=[3], episodes_per_seed=2)

    def factory() -> LLMAgent:
        return agent_for(server, seed=7, temperature=1.0)

    config = build_config(plan, factory(), agent_options={}, prices=None, seeds_spec="3")
    asyncio.run(runner.run_eval(plan, tmp_path, factory, config))
    sent = [request.body["seed"] for request in server.requests]
    assert len(sent) == 2 and len(set(sent)) == 2
    before = int.from_bytes(hashlib.blake2b(b"7:em-anomaly:3:1:0", digest_size=4).digest()) >> 1
    assert before in sent


def test_unset_sampling_options_are_not_sent(server: OpenAIServer) -> None:
    server.script(text("wait"))
    env = textenvs.make("treasure-hunt")
    env.max_steps = 1
    play(agent_for(server), env=env)
    body = server.requests[0].body
    for absent in ("temperature", "max_tokens", "seed", "reasoning_effort", "tools"):
        assert absent not in body


@pytest.mark.parametrize(
    "reply",
    [
        text("Action: north", reasoning_content="south is a trap, so not south"),
        text("Action: north", reasoning="south is a trap, so not south"),
        think("south is a trap, so not south", "Action: north"),
    ],
    ids=["reasoning_content", "reasoning", "think-block"],
)
def test_reasoning_is_kept_in_the_record_and_stripped_before_parsing(
    server: OpenAIServer, reply: Any
) -> None:
    server.script(reply, text("wait"))
    env = textenvs.make("treasure-hunt")
    env.max_steps = 2
    result = play(agent_for(server), env=env)
    turn = result.turns[0]
    # "south" appears only in the reasoning: parsed with it, the reply would be ambiguous
    assert turn.command == "north" and not turn.invalid_action
    assert turn.record["replies"][0]["reasoning"] == "south is a trap, so not south"
    assert turn.usage["reasoning_tokens"] == 7
    replayed = server.requests[1].messages[2]
    assert replayed == {"role": "assistant", "content": "Action: north"}


def test_unreadable_reply_is_reasked_with_the_parser_message(server: OpenAIServer) -> None:
    server.script(text("I like turtles"), text("Action: east"))
    env = textenvs.make("treasure-hunt")
    env.max_steps = 1
    result = play(agent_for(server, reasks=1), env=env)
    turn = result.turns[0]
    assert (turn.command, turn.reasks, result.reasks, turn.invalid_action) == ("east", 1, 1, False)
    assert turn.record["attempts"] == 2 and len(turn.record["parse_errors"]) == 1
    reask = server.requests[1].messages
    assert reask[-2] == {"role": "assistant", "content": "I like turtles"}
    assert reask[-1]["role"] == "user"
    assert reask[-1]["content"].startswith("Your command could not be read:")
    assert "north" in reask[-1]["content"]  # the valid forms are listed


@pytest.mark.parametrize("reasks", [0, 2])
def test_reasks_are_bounded_then_the_turn_is_wasted(server: OpenAIServer, reasks: int) -> None:
    server.script(*[text("north and south")] * (reasks + 1))
    env = textenvs.make("treasure-hunt")
    env.max_steps = 1
    result = play(agent_for(server, reasks=reasks), env=env)
    turn = result.turns[0]
    assert len(server.requests) == reasks + 1
    assert turn.reasks == reasks and turn.invalid_action
    assert len(turn.record["parse_errors"]) == reasks + 1


def test_empty_and_reasoning_exhausted_replies_are_classified(server: OpenAIServer) -> None:
    server.script(
        empty(),
        empty(finish_reason="length", reasoning_content="step one, step two, step three"),
        empty(),
    )
    env = textenvs.make("treasure-hunt")
    env.max_steps = 1
    result = play(agent_for(server, reasks=2), env=env)
    turn = result.turns[0]
    assert turn.record["reply_faults"] == ["empty", "reasoning_exhausted", "empty"]
    assert turn.usage["reply_empty"] == 2 and turn.usage["reply_reasoning_exhausted"] == 1
    assert result.usage["reply_empty"] == 2  # counted at episode level too
    assert turn.invalid_action and turn.reasks == 2  # stepped as a wasted turn, not scored
    assert server.requests[1].messages[-1]["content"].startswith("Your reply was empty.")


def test_tools_mode(server: OpenAIServer) -> None:
    server.script(
        tool_call({"action": "fly"}),  # not in the schema: re-asked through a tool message
        tool_call({"action": "east"}),
        text("Action: north"),  # a model that ignores the tool is still read
    )
    env = textenvs.make("treasure-hunt")
    env.max_steps = 2
    result = play(agent_for(server, action_mode="tools", reasks=1), seed=1, env=env)
    assert [t.command for t in result.turns] == ["east", "north"]
    assert result.turns[0].reasks == 1 and not result.turns[0].invalid_action
    body = server.requests[0].body
    assert body["tool_choice"] == "auto"
    (tool,) = body["tools"]
    assert tool["function"]["name"] == "act"
    props = tool["function"]["parameters"]["properties"]["action"]
    assert set(props["enum"]) == {"north", "south", "east", "west", "reveal", "wait"}
    reask = server.requests[1].messages
    call_id = reask[-2]["tool_calls"][0]["id"]
    assert reask[-1]["role"] == "tool" and reask[-1]["tool_call_id"] == call_id
    assert "do not match the schema" in reask[-1]["content"]
    # in the next turn's history every tool call is answered
    history = server.requests[2].messages
    calls = [c["id"] for m in history if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    answered = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert calls and sorted(calls) == sorted(answered)


def test_tools_mode_reads_the_command_of_trls_act_tool(server: OpenAIServer) -> None:
    """A model trained with `textenvs.adapters.trl` calls `act(command)`: the command text
    is read by the scenario's parser, as in text mode."""
    server.script(
        tool_call({"command": "fly"}),  # no such command: re-asked with the parser's reason
        tool_call({"command": "Action: east"}),
        tool_call({"command": "north", "action": "west"}),  # neither form: not read
        tool_call({"command": "north", "action": "west"}),
    )
    env = textenvs.make("treasure-hunt")
    env.max_steps = 2
    result = play(agent_for(server, action_mode="tools", reasks=1), seed=1, env=env)
    assert result.turns[0].command == "east"
    assert result.turns[0].reasks == 1 and not result.turns[0].invalid_action
    assert result.turns[1].invalid_action
    assert "could not be read" in server.requests[1].messages[-1]["content"]
    assert "do not match the schema" in result.turns[1].record["parse_errors"][-1]


@pytest.mark.parametrize(("mode", "per_turn"), [("text", 2), ("tools", 3)])
def test_history_stays_bounded_over_a_40_step_episode(
    server: OpenAIServer, mode: str, per_turn: int
) -> None:
    server.default = tool_call({"action": "wait"}) if mode == "tools" else text("Action: wait")
    keep = 3
    result = play(agent_for(server, history=keep, action_mode=mode), env=LongHunt())
    assert (result.steps, result.outcome, len(server.requests)) == (40, "timeout", 40)
    sizes = []
    for i, request in enumerate(server.requests):
        messages = request.messages
        assert len(messages) == 1 + per_turn * min(i, keep) + 1
        # the oldest turn kept is exactly K turns back
        assert messages[1]["content"] == result.turns[max(0, i - keep)].observation
        sizes.append(len(json.dumps(messages)))
        assert result.turns[i].record["history_turns"] == min(i, keep)
    assert max(sizes[keep:]) < 2 * min(sizes[keep:])  # no growth once the window is full


def test_history_zero_sends_only_the_current_observation(server: OpenAIServer) -> None:
    server.default = text("wait")
    env = textenvs.make("treasure-hunt")
    env.max_steps = 5
    play(agent_for(server, history=0), env=env)
    assert [len(r.messages) for r in server.requests] == [2] * 5


def test_config_is_json_and_names_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    agent = LLMAgent(model="m", base_url="https://user:hunter2@example.test/v1?key=abc")
    config = agent.config()
    assert config["name"] == "llm" and config["base_url"] == "https://example.test/v1"
    blob = json.dumps(config)
    assert KEY not in blob and "hunter2" not in blob and "abc" not in blob
