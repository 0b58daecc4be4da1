"""A JSON key given twice with different values, in the `llm` agent's json and tools
modes and in the checkpoint server's tool calls: the reply is rejected with a reason
that names the key, never read with the last value."""

from __future__ import annotations

from typing import Any

import pytest

import textenvs
from benchmarks.support.openai_server import OpenAIServer, text, tool_call
from tests.agents.llm_support import agent_for, play
from textenvs.core.parsing import ParseError
from textenvs.inference.tool_calls import split_reply, template_messages


def short_hunt(steps: int = 1) -> Any:
    env = textenvs.make("treasure-hunt")
    env.max_steps = steps
    return env


@pytest.mark.parametrize(
    "content",
    [
        '{"reasoning": "", "action": "east", "action": "reveal"}',
        '{"reasoning": "the east is open", "reasoning": "go west", "action": "east"}',
    ],
)
def test_json_mode_rejects_a_key_given_twice(server: OpenAIServer, content: str) -> None:
    server.script(text(content))
    result = play(agent_for(server, action_mode="json", reasks=0), env=short_hunt())
    turn = result.turns[0]
    assert turn.invalid_action
    key = "action" if content.count('"action"') == 2 else "reasoning"
    assert f"'{key}' twice" in turn.record["parse_errors"][-1]


def test_json_mode_reads_a_key_given_twice_with_the_same_value(server: OpenAIServer) -> None:
    server.script(text('{"reasoning": "", "action": "east", "action": "east"}'))
    result = play(agent_for(server, action_mode="json", reasks=0), env=short_hunt())
    assert result.turns[0].command == "east" and result.invalid_actions == 0


@pytest.mark.parametrize(
    "arguments",
    [
        '{"action": "east", "action": "reveal"}',
        '{"command": "east", "command": "reveal"}',
        '{"command": "{\\"action\\": \\"east\\", \\"action\\": \\"reveal\\"}"}',
    ],
)
def test_tools_mode_rejects_arguments_with_a_key_given_twice(
    server: OpenAIServer, arguments: str
) -> None:
    server.script(tool_call(arguments), tool_call('{"action": "east", "action": "east"}'))
    result = play(agent_for(server, action_mode="tools", reasks=1), env=short_hunt())
    turn = result.turns[0]
    assert turn.reasks == 1 and turn.command == "east"  # the repeat with one value reads
    problem = server.requests[1].messages[-1]["content"]
    assert "twice" in problem and ("'action'" in problem or "'command'" in problem), problem


def _hermes(arguments: str) -> str:
    return f'<tool_call>\n{{"name": "act", "arguments": {arguments}}}\n</tool_call>'


def test_the_checkpoint_server_leaves_a_call_with_a_key_given_twice_in_the_text() -> None:
    """Turned into an OpenAI call its arguments would be re-serialised with one value;
    left in the text, the client's reader rejects it naming the key."""
    block = _hermes('{"action": "east", "action": "mark"}')
    content, calls = split_reply(block)
    assert calls == [] and content == block
    env = textenvs.make("em-anomaly")
    with pytest.raises(ParseError, match="'action' twice"):
        env.parse(content)
    same = _hermes('{"action": "east", "action": "east"}')
    content, calls = split_reply(same)
    assert content is None and calls[0]["function"]["arguments"] == '{"action": "east"}'


def test_a_call_with_a_key_given_twice_is_shown_to_the_template_as_sent() -> None:
    arguments = '{"action": "east", "action": "mark"}'
    call = {"id": "c1", "type": "function", "function": {"name": "act", "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    (shown,) = template_messages([message])
    assert shown["tool_calls"][0]["function"]["arguments"] == arguments
