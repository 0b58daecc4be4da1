"""The constrained action mode (`--action-mode json`) against the loopback server, with
the traits of both kinds of real servers: those that take `json_schema` (OpenAI, vLLM,
llama-server) and llama-cpp-python's, which answers it with a 500 and takes
`json_object`."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

import textenvs
from benchmarks.support.openai_server import OpenAIServer, RecordedRequest, Reply, text
from tests.agents.llm_support import agent_for, play
from textenvs.agents.llm import json_mode
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.preflight import check_learning


def short_hunt(steps: int = 3) -> Any:
    env = textenvs.make("treasure-hunt")
    env.max_steps = steps
    return env


def reply(action: dict[str, Any], thought: str = "look around") -> Reply:
    return text(json.dumps({"reasoning": thought, **action}))


def test_json_mode_sends_the_schema_and_reads_the_object(server: OpenAIServer) -> None:
    server.script(reply({"action": "east"}, "east is open"), reply({"action": "reveal"}))
    result = play(agent_for(server, action_mode="json"), seed=1, env=short_hunt(2))
    assert [t.command for t in result.turns] == ["east", "reveal"]
    assert result.reasks == 0 and result.invalid_actions == 0
    body = server.requests[0].body
    form = body["response_format"]
    assert form["type"] == "json_schema"
    schema = form["json_schema"]["schema"]
    # reasoning first (required, bounded), then the action's own fields
    assert list(schema["properties"]) == ["reasoning", "action"]
    assert schema["required"][0] == "reasoning" and "action" in schema["required"]
    assert schema["properties"]["reasoning"]["maxLength"] == 240
    assert schema["properties"]["action"]["enum"][:4] == ["north", "south", "east", "west"]
    assert body["max_tokens"] == json_mode.reply_tokens(schema)  # sized to the schema
    assert "JSON object" in body["messages"][0]["content"]
    assert result.turns[0].record["replies"][0]["reasoning"] == "east is open"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"reasoning": "", "action": "fly"}', "does not match the action schema"),
        ('{"reasoning": "", "action": "east", "speed": 3}', "does not match the action schema"),
        ("Action: east", "not one JSON object"),
        ("[1, 2]", "not one JSON object"),
    ],
)
def test_a_value_the_schema_cannot_hold_is_a_rejection(
    server: OpenAIServer, content: str, problem: str
) -> None:
    """Never dropped or repaired: re-asked with why, then stepped as unreadable."""
    server.script(text(content), text(content))
    result = play(agent_for(server, action_mode="json", reasks=1), env=short_hunt(1))
    record = result.turns[0].record
    assert result.reasks == 1 and result.invalid_actions == 1
    assert all(problem in error for error in record["parse_errors"])
    assert len(record["parse_errors"]) == 2
    assert "Valid commands" in server.requests[1].messages[-1]["content"]


def test_a_line_break_inside_the_reasoning_is_read(server: OpenAIServer) -> None:
    """llama-cpp-python's grammar lets a raw line break into a string."""
    server.script(text('{ "reasoning": "the field\nrose","action": "west"}'))
    result = play(agent_for(server, action_mode="json", reasks=0), env=short_hunt(1))
    assert result.turns[0].command == "west" and result.invalid_actions == 0


@pytest.mark.parametrize(
    ("content", "command"),
    [
        ('{"action": "west", "reasoning": "Wait, I meant east."}', None),
        ('{"action": "west", "reasoning": "No, east."}', None),
        ('{"action": "west", "reasoning": "The east is a wall."}', "west"),
        ('{"reasoning": "Wait, I meant east.", "action": "west"}', "west"),
    ],
)
def test_a_reasoning_after_the_action_that_takes_it_back_is_a_rejection(
    server: OpenAIServer, content: str, command: str | None
) -> None:
    """Issue 43: the object's last word is read as a paragraph after an Action: line."""
    server.script(text(content))
    result = play(agent_for(server, action_mode="json", reasks=0), env=short_hunt(1))
    turn = result.turns[0]
    assert turn.invalid_action == (command is None)
    assert command is None or turn.command == command


def test_json_mode_switches_form_for_llama_cpp_python(server: OpenAIServer) -> None:
    """A 500 naming response_format: the same request goes again as json_object, and
    later agents of the process use that form from the start."""
    with OpenAIServer(response_formats=("text", "json_object")) as picky:
        picky.script(reply({"action": "north"}), reply({"action": "south"}))
        first = play(agent_for(picky, action_mode="json"), env=short_hunt(1))
        second = play(agent_for(picky, action_mode="json"), env=short_hunt(1))
        kinds = [r.body["response_format"]["type"] for r in picky.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert first.outcome != "agent_error" and second.outcome != "agent_error"
    assert [first.turns[0].command, second.turns[0].command] == ["north", "south"]
    errors = first.turns[0].record["request_errors"]
    assert len(errors) == 1 and "response_format" in errors[0]["error"]
    assert errors[0]["wait_s"] == 0
    assert picky.requests[1].body["response_format"]["schema"]["properties"]["action"]


def test_a_server_that_takes_no_schema_form_is_an_agent_error() -> None:
    with OpenAIServer(response_formats=("text",)) as plain:
        result = play(agent_for(plain, action_mode="json"), env=short_hunt(1))
        assert len(plain.requests) == 2  # one of each form, no backoff retries
    assert result.outcome == "agent_error" and "response_format" in (result.error or "")


def test_preflight_learns_the_json_form() -> None:
    with OpenAIServer(response_formats=("json_object",), default=text("{}")) as picky:
        config = LLMConfig(model="test-model", base_url=picky.base_url, action_mode="json")
        line, learned = check_learning(config)
    assert "lists model" in line and learned == {"response_format": "json_object"}
    with OpenAIServer(default=text("{}")) as open_server:
        config = LLMConfig(model="test-model", base_url=open_server.base_url, action_mode="json")
        assert check_learning(config)[1] == {"response_format": "json_schema"}
        sent = open_server.requests[0].body
        assert sent["max_tokens"] == 1 and sent["response_format"]["type"] == "json_schema"


def test_squad_orders_and_megacity_cells_are_read_through_the_schema(
    server: OpenAIServer,
) -> None:
    def answer(request: RecordedRequest) -> Reply:
        schema = request.body["response_format"]["json_schema"]["schema"]
        if "anyOf" in schema:  # Megacity: one variant per kind of action
            return reply({"action": "scan", "cells": ["zz"]})  # no such cell: a rejection
        return reply({"a": "north", "b": "hold"})

    server.default = answer
    squad = play(agent_for(server, action_mode="json", reasks=0), env=_steps("squad-recon"))
    mega = play(agent_for(server, action_mode="json", reasks=0), env=_steps("megacity"))
    assert squad.invalid_actions == 0 and "a north" in squad.turns[0].command.lower()
    assert mega.invalid_actions == 1 and mega.turns[0].record["parse_errors"]


def _steps(name: str, steps: int = 1) -> Any:
    env = textenvs.make(name)
    env.max_steps = steps
    return env


def test_config_and_reports_name_the_mode() -> None:
    assert LLMConfig(model="m").public()["action_mode"] == "text"
    assert LLMConfig(model="m", action_mode="json").public()["action_mode"] == "json"
    assert LLMConfig(model="local").public()["action_mode"] == "json"  # the embedded default


def test_every_object_megacitys_decoding_schema_admits_is_an_action() -> None:
    """A constrained decoder writes only what the schema admits: Megacity's schema is one
    variant per kind of action, so no admitted object fails the validator (the flat schema
    let SmolLM2 write `vent` without a direction on every turn)."""
    jsonschema = pytest.importorskip("jsonschema")
    env = textenvs.make("megacity")
    env.reset(seed=0)
    schema = json_mode.response_schema(env.action_schema, 80)
    admitted = 0
    for variant in schema["anyOf"]:
        properties = variant["properties"]
        for kind in properties["action"]["enum"]:
            names = [name for name in ("material", "direction") if name in properties]
            for extra in itertools.product(*(properties[name]["enum"] for name in names)):
                obj = {"action": kind, **dict(zip(names, extra, strict=True))}
                if "cells" in properties:
                    obj["cells"] = ["B3", "B4", "B5"][: properties["cells"]["maxItems"]]
                jsonschema.validate({"reasoning": "", **obj}, schema)
                env.parse(env.action_schema(**obj).to_command())
                admitted += 1
    assert admitted == 2 + 4 + 4 + 1 + 3
    for refused in (
        {"action": "vent", "cells": ["B3"]},
        {"action": "support", "cells": ["B3"], "direction": "east"},
        {"action": "wait", "cells": ["B3"]},
        {"action": "excavate", "cells": ["B3", "B4"]},
        {"action": "conduit", "cells": []},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"reasoning": "", **refused}, schema)
