"""A JSON key given twice is two values: in every scenario and every JSON shape a reply
may carry its action in, a key repeated with a different value rejects the reply with a
reason that names the key; repeated with the same value it is read as once.

Shapes: a bare object, one in a code fence, a Hermes `<tool_call>`, a call whose
`arguments` is a JSON string, an OpenAI `{"tool_calls": [...]}` list, Mistral's
`[TOOL_CALLS]`; the keys: the action, and the scenario's own fields (a squad's order in
Squad Recon, `cells`, `material` and `direction` in Megacity).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import textenvs
from tests.parsing.corpora import ENVS, canonical
from tests.parsing.strategies import commands
from textenvs.core.parsing import ParseError

Pairs = list[tuple[str, Any]]


def _object(pairs: Pairs) -> str:
    """A JSON object written with its keys as given, repeats included (json.dumps of a
    dict cannot write a key twice)."""
    return "{" + ", ".join(f"{json.dumps(key)}: {json.dumps(value)}" for key, value in pairs) + "}"


SHAPES: dict[str, Callable[[str], str]] = {
    "bare": lambda obj: obj,
    "reasoning first": lambda obj: "I looked at the map.\n\n" + obj,
    "code fence": lambda obj: f"Here is my action:\n```json\n{obj}\n```",
    "hermes": lambda obj: f'<tool_call>\n{{"name": "act", "arguments": {obj}}}\n</tool_call>',
    "arguments string": lambda obj: f'{{"name": "act", "arguments": {json.dumps(obj)}}}',
    "openai tool_calls": lambda obj: (
        '{"tool_calls": [{"id": "call_1", "type": "function", '
        f'"function": {{"name": "act", "arguments": {json.dumps(obj)}}}}}]}}'
    ),
    "mistral": lambda obj: f'[TOOL_CALLS][{{"name": "act", "arguments": {obj}}}]',
}


def _two(env_name: str, data: st.DataObject) -> tuple[str, str]:
    """Two commands of `env_name` that are read differently."""
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    d = data.draw(commands(env_name).filter(lambda d: env.parse(d) != env.parse(c)))
    return c, d


def _field_pairs(env_name: str, data: st.DataObject) -> tuple[str, Pairs, Pairs]:
    """A key of the scenario's own fields, and an object with it once and twice (with a
    different value the second time)."""
    if env_name == "squad-recon":
        unit = data.draw(st.sampled_from(["a", "b", "c", "A", "B"]))
        first, second = data.draw(
            st.lists(st.sampled_from(["north", "south", "east", "west", "hold", "attack"]),
                     min_size=2, max_size=2, unique=True)
        )  # fmt: skip
        return unit, [(unit, first)], [(unit, first), (unit, second)]
    field = data.draw(st.sampled_from(["cells", "material", "direction"]))
    cells = data.draw(st.lists(st.sampled_from(["E1", "D2", "B3", "C2"]), min_size=2,
                               max_size=2, unique=True))  # fmt: skip
    if field == "cells":
        once: Pairs = [("action", "excavate"), ("cells", [cells[0]])]
        return field, once, [*once, ("cells", [cells[1]])]
    if field == "material":
        once = [("action", "support"), ("cells", [cells[0]]), ("material", "timber")]
        return field, once, [*once, ("material", "basalt")]
    once = [("action", "vent"), ("cells", [cells[0]]), ("direction", "east")]
    return field, once, [*once, ("direction", "north")]


def _read(env: Any, env_name: str, reply: str) -> str:
    return canonical(env_name)(env.parse(reply))


def _rejected_naming(env: Any, reply: str, key: str) -> str:
    with pytest.raises(ParseError) as caught:
        env.parse(reply)
    message = caught.value.message
    assert f"'{key}'" in message and "twice" in message, (reply, message)
    return message


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_an_action_given_twice_with_different_values_is_rejected(
    env_name: str, shape: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    c, d = _two(env_name, data)
    pairs: Pairs = [("action", c), ("action", d)]
    if data.draw(st.booleans()):
        pairs.insert(0, ("reasoning", "the map is clear"))
    _rejected_naming(env, SHAPES[shape](_object(pairs)), "action")


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_an_action_given_twice_with_the_same_value_is_read(
    env_name: str, shape: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    reply = SHAPES[shape](_object([("action", c), ("action", c)]))
    assert _read(env, env_name, reply) == _read(env, env_name, c), reply


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("env_name", ["squad-recon", "megacity"])
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_scenario_field_given_twice_with_different_values_is_rejected(
    env_name: str, shape: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    key, once, twice = _field_pairs(env_name, data)
    assert _read(env, env_name, SHAPES[shape](_object(once)))  # the object once is read
    _rejected_naming(env, SHAPES[shape](_object(twice)), key)
    same = [*once, once[-1]]
    assert _read(env, env_name, SHAPES[shape](_object(same))) == _read(
        env, env_name, SHAPES[shape](_object(once))
    )


@pytest.mark.parametrize("env_name", ENVS)
def test_a_tool_call_wrapper_with_two_argument_objects_is_rejected(env_name: str) -> None:
    """The repeat is a wrapper's own key: two `arguments` are two calls' worth."""
    env = textenvs.make(env_name)
    c = {"megacity": "research", "squad-recon": "A north", "magnetic-field": "submit"}
    first = c.get(env_name, "north")
    second = {"megacity": "scan", "squad-recon": "A attack", "magnetic-field": "right"}
    args = [
        ("arguments", {"action": first}),
        ("arguments", {"action": second.get(env_name, "west")}),
    ]
    _rejected_naming(env, _object([("name", "act"), *args]), "arguments")
