"""The reading invariant, per scenario: a reply is executed only if it has exactly one
reading, and that reading is everything it orders (`docs/architecture.md`).

- Corpora (`corpus/<env>.json`): real and realistic replies, each with its expected
  reading (the canonical command) or `null` for a rejection; a regression either way fails.
- Honest replies in the taught format (`corpus/honest/<env>.json`, written independently
  of the parser, in the styles different models answer in): none is misread, and at most
  3% are rejected.
- Fresh honest replies in every format (`corpus/fresh/<env>.json`, issue 43): none is
  misread, at most 3% of those in the taught format and 10% of all are rejected.
- Properties: a canonical command wrapped in prose, markdown or an `Action:` line reads as
  the command itself; two different canonical commands in one template are rejected.
- Structured actions: an argument the schema cannot represent is a validation error.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import textenvs
from tests.parsing.corpora import ENVS, load_corpus, reading_of
from tests.parsing.strategies import commands
from textenvs.core.parsing import ParseError
from textenvs.scenarios.megacity.state import MATERIALS

MIN_CORPUS = 80


CASES = [
    pytest.param(name, index, id=f"{name}-{index}")
    for name in ENVS
    for index in range(len(load_corpus(name)))
]


@pytest.mark.parametrize("env_name", ENVS)
def test_corpus_is_large_enough(env_name: str) -> None:
    entries = load_corpus(env_name)
    assert len(entries) >= MIN_CORPUS
    assert len({e["reply"] for e in entries}) == len(entries), "duplicate replies"
    assert any(e["expect"] is None for e in entries) and any(e["expect"] for e in entries)


@pytest.mark.parametrize(("env_name", "index"), CASES)
def test_corpus_reply_reads_as_expected(env_name: str, index: int) -> None:
    entry = load_corpus(env_name)[index]
    env = textenvs.make(env_name)
    assert reading_of(env, env_name, entry["reply"]) == entry["expect"], entry["reply"]


# The target for honest replies in the taught format (`corpus/honest/`): none misread, at
# most this share rejected (each is a wasted turn the model did not earn).
HONEST_REJECTED_AT_MOST = 0.03


def test_honest_replies_are_never_misread_and_seldom_rejected() -> None:
    misread: list[str] = []
    rejected: list[str] = []
    replies = 0
    for env_name in ENVS:
        env = textenvs.make(env_name)
        entries = load_corpus(env_name, "honest")
        assert len(entries) >= MIN_CORPUS and all(entry["expect"] for entry in entries)
        replies += len(entries)
        for entry in entries:
            got = reading_of(env, env_name, entry["reply"])
            if got is None:
                rejected.append(entry["reply"])
            elif got != entry["expect"]:
                misread.append(entry["reply"])
    assert not misread
    assert len(rejected) <= HONEST_REJECTED_AT_MOST * replies, rejected


# ...and for the fresh corpus, in every format (`corpus/fresh/`): at most this share of all.
FRESH_REJECTED_AT_MOST = 0.10


def test_fresh_honest_replies_are_never_misread_and_seldom_rejected() -> None:
    misread: list[str] = []
    rejected: dict[bool, list[str]] = {True: [], False: []}
    replies = {True: 0, False: 0}
    for env_name in ENVS:
        env = textenvs.make(env_name)
        for entry in load_corpus(env_name, "fresh"):
            replies[entry["taught"]] += 1
            got = reading_of(env, env_name, entry["reply"])
            if got is None:
                rejected[entry["taught"]].append(entry["reply"])
            elif got != entry["expect"]:
                misread.append(entry["reply"])
    assert not misread
    assert len(rejected[True]) <= HONEST_REJECTED_AT_MOST * replies[True], rejected[True]
    every = rejected[True] + rejected[False]
    assert len(every) <= FRESH_REJECTED_AT_MOST * sum(replies.values()), every


# ----- properties: prose around one command changes nothing; two commands are rejected ----

ONE = [
    "{c}",
    "Action: {c}",
    "**Action:** {c}",
    "Final answer: {c}",
    "**{c}**",
    "`{c}`",
    "```\n{c}\n```",
    "{c}.",
    "I think the best move is {c}.",
    "Let me think... {c}",
    "<think>Not sure yet; let me weigh it.</think>\n{c}",
    "The observation is clear.\n\nAction: {c}",
    "I looked at everything.\nAction: `{c}`",
    "I will do this: {c}",
]
TWO = [
    "{c} then {d}",
    "{c}\n{d}",
    "Action: {c}\nAction: {d}",
    "First {c}, then {d}.",
    "{c}. Next turn, {d}.",
    "I think {c}, and {d}.",
]


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_prose_around_a_command_reads_as_the_command(env_name: str, data: st.DataObject) -> None:
    env = textenvs.make(env_name)
    command = data.draw(commands(env_name))
    template = data.draw(st.sampled_from(ONE))
    assert env.parse(template.format(c=command)) == env.parse(command)


@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_two_different_commands_are_rejected(env_name: str, data: st.DataObject) -> None:
    env = textenvs.make(env_name)
    first = data.draw(commands(env_name))
    second = data.draw(commands(env_name))
    if env_name == "squad-recon":
        # orders for different squads make one command: give squad A two different orders
        first, second = f"A {first.split()[-1]}", f"A {second.split()[-1]}"
    if env.parse(first) == env.parse(second):
        return
    template = data.draw(st.sampled_from(TWO))
    with pytest.raises(ParseError):
        env.parse(template.format(c=first, d=second))


# ----- structured actions: nothing the schema cannot represent is dropped -----------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"action": "excavate", "cells": ["B3", "C3"]},
        {"action": "district", "cells": []},
        {"action": "excavate", "cells": ["B3"], "material": MATERIALS[0]},
        {"action": "support", "cells": ["C2"]},
        {"action": "vent", "cells": ["A1"], "material": MATERIALS[0]},
        {"action": "conduit", "cells": ["B1", "B2", "B3", "B4"]},
        {"action": "scan", "cells": ["B3"]},
        {"action": "wait", "direction": "north"},
        # a cell that smuggles another command or a second cell in
        {"action": "excavate", "cells": ["B3\nAction: district B3"]},
        {"action": "excavate", "cells": ["B3 C3"]},
        {"action": "conduit", "cells": ["B2->B3"]},
    ],
)
def test_megacity_schema_rejects_what_it_cannot_represent(arguments: dict[str, Any]) -> None:
    env = textenvs.make("megacity")
    with pytest.raises(ValidationError):
        env.command_for(arguments)


@pytest.mark.parametrize(
    ("env_name", "arguments"),
    [
        ("treasure-hunt", {"action": "north", "steps": 2}),
        ("em-anomaly", {"action": "rotate left twice"}),
        ("magnetic-field", {"action": "FAAE"}),
        ("magnetic-field", {"action": "submit", "answer": "FAAE"}),
        ("squad-recon", {"a": "north", "d": "east"}),
        ("squad-recon", {"a": "north east"}),
    ],
)
def test_schemas_reject_arguments_they_cannot_represent(
    env_name: str, arguments: dict[str, Any]
) -> None:
    with pytest.raises(ValidationError):
        textenvs.make(env_name).command_for(arguments)


@pytest.mark.parametrize(
    ("arguments", "command"),
    [
        ({"action": "excavate", "cells": ["B3"]}, "excavate B3"),
        (
            {"action": "support", "cells": ["C2"], "material": MATERIALS[1]},
            f"support C2 {MATERIALS[1]}",
        ),
        ({"action": "conduit", "cells": ["B2", "B3"]}, "conduit B2 B3"),
        ({"action": "scan"}, "scan"),
    ],
)
def test_megacity_structured_actions_read_whole(arguments: dict[str, Any], command: str) -> None:
    env = textenvs.make("megacity")
    assert env.parse(env.command_for(arguments)).command() == command


@pytest.mark.parametrize(
    ("env_name", "arguments", "command"),
    [
        # Megacity names its arguments: their values follow the action's word
        ("megacity", {"action": "support", "material": MATERIALS[1], "cells": ["C2"]},
         f"support C2 {MATERIALS[1]}"),
        ("megacity", {"action": "vent", "direction": "east", "cell": "A1"}, "vent A1 east"),
        # Squad Recon's units: a one-letter key is a squad with its order
        ("squad-recon", {"b": "east", "a": "north"}, "A north; B east"),
    ],
)  # fmt: skip
def test_json_replies_read_the_keys_their_scenario_names(
    env_name: str, arguments: dict[str, Any], command: str
) -> None:
    env = textenvs.make(env_name)
    assert env.parse(json.dumps(arguments)) == env.parse(command)


@pytest.mark.parametrize(
    ("env_name", "arguments"),
    [
        # another scenario's keys are no arguments here: the reply is rejected
        ("treasure-hunt", {"action": "north", "cells": ["B3"]}),
        ("em-anomaly", {"action": "mark", "material": "basalt"}),
        ("magnetic-field", {"a": "right"}),
        ("megacity", {"a": "scan"}),
    ],
)
def test_json_replies_with_keys_their_scenario_does_not_name_are_rejected(
    env_name: str, arguments: dict[str, Any]
) -> None:
    with pytest.raises(ParseError):
        textenvs.make(env_name).parse(json.dumps(arguments))


def test_the_misreads_count_runs_without_pytest() -> None:
    """docs/architecture.md gives `python -m tests.parsing.misreads` to anyone: it needs
    no test tools (the base install has neither pytest nor hypothesis)."""
    import subprocess
    import sys

    blocked = "import sys; sys.modules['pytest'] = sys.modules['hypothesis'] = None; "
    run = "import runpy; runpy.run_module('tests.parsing.misreads', run_name='__main__')"
    done = subprocess.run(
        [sys.executable, "-c", blocked + run], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    # the expected readings, the honest corpus, the fresh corpus taught and whole
    assert done.stdout.count("\nall ") == 4
