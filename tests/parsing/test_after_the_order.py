"""What follows the order on an `Action:` line: one rule in every scenario, whatever
joins it to the order. A remark is read as a remark (the order runs); a condition or a
second order rejects the reply (the rules say conditions are not carried out, and one
reply is one command).

Connectors: a dash, an en dash, a comma, a semicolon, `because`, and the condition
words `provided`, `unless`, `if`, `once` (which make whatever follows them a condition).
Orders and remarks use each scenario's own vocabulary (`textenvs rules <env>`).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import textenvs
from tests.parsing.corpora import ENVS, reading_of
from tests.parsing.strategies import commands

# How a connector joins what follows it to the order.
JOINS = {"dash": " — ", "en dash": " – ", "comma": ", ", "semicolon": "; ", "because": " because "}
CONDITION_WORDS = ["provided", "unless", "if", "once"]
CONNECTORS = [*JOINS, *CONDITION_WORDS]
# What makes a clause a condition after a dash, a comma or a semicolon.
CONDITIONS = ["if", "unless", "provided", "provided that", "once", "only if", "as long as"]
PREFIXES = ["Action: ", "**Action:** ", "I checked the map.\nAction: ", "Final answer: "]

# Descriptions a model writes about the state: as remarks they are read as remarks, after
# a condition word they are the condition.
CLAUSES = {
    "treasure-hunt": ["the wall is far away", "the east is a wall", "row 2 is still unexplored",
                      "the path is clear", "the gold is close"],
    "em-anomaly": ["the field reads 3", "the field is higher there", "the west is fully explored",
                   "the reading rises", "the node is near"],
    "magnetic-field": ["window 1 reads 00", "the checksum adds up", "the hints agree",
                       "windows 1-2 read 0001", "the message repeats in windows 9-16",
                       "both windows read 11"],
    "squad-recon": ["the camp is north of A", "it is the weakest squad", "the forest hides us",
                    "the camp is weak", "the enemy is close", "both camps are still unseen"],
    "megacity": ["the seam runs through B2", "it carries the load of the chamber",
                 "the stress is low", "the column holds its load and air is 4 there",
                 "B2 sits on the seam", "the stress at C3 is 70", "both seams are clear of it",
                 "C3's stress is 40"],
}  # fmt: skip
# Remarks that are not a clause to put after a condition word.
REMARKS = {
    "treasure-hunt": ["I'm not yet sure where the treasure is", "unexplored territory"],
    "em-anomaly": ["reading 3, I am on the node", "toward the higher field"],
    "magnetic-field": ["bits 1-4 are 0011", "window 1 reads 00 and window 2 reads 01"],
    "squad-recon": ["all three are close to the camp", "C is too weak to help"],
    "megacity": ["not excavate yet, the stress is too high", "low stress (72), off both seams",
                 "not on a seam"],
}  # fmt: skip
SQUAD_ORDERS = ["north", "south", "east", "west", "hold", "attack"]


def _two(env_name: str, data: st.DataObject) -> tuple[str, str]:
    """Two different commands; in Squad Recon, orders for one squad (which conflict)."""
    if env_name == "squad-recon":
        squad = data.draw(st.sampled_from(["A", "B", "C"]))
        first, second = data.draw(
            st.lists(st.sampled_from(SQUAD_ORDERS), min_size=2, max_size=2, unique=True)
        )
        return f"{squad} {first}", f"{squad} {second}"
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    d = data.draw(commands(env_name).filter(lambda d: env.parse(d) != env.parse(c)))
    return c, d


def _remark(env_name: str, connector: str, data: st.DataObject) -> str:
    """A remark: after `because` a clause (a reason), elsewhere any remark."""
    pool = CLAUSES[env_name] + ([] if connector == "because" else REMARKS[env_name])
    return data.draw(st.sampled_from(pool))


def _condition(env_name: str, data: st.DataObject) -> str:
    word = data.draw(st.sampled_from(CONDITIONS))
    return f"{word} {data.draw(st.sampled_from(CLAUSES[env_name]))}"


@pytest.mark.parametrize("connector", list(JOINS))
@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_remark_after_the_order_is_read_as_a_remark(
    env_name: str, connector: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    prefix = data.draw(st.sampled_from(PREFIXES))
    reply = f"{prefix}{c}{JOINS[connector]}{_remark(env_name, connector, data)}"
    assert reading_of(env, env_name, reply) == reading_of(env, env_name, c), reply


@pytest.mark.slow
@pytest.mark.parametrize("connector", CONNECTORS)
@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_condition_after_the_order_rejects_the_reply(
    env_name: str, connector: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    c = data.draw(commands(env_name))
    prefix = data.draw(st.sampled_from(PREFIXES))
    if connector in CONDITION_WORDS:  # the connector itself makes it a condition
        after = f" {connector} {_remark(env_name, 'because', data)}"
    elif connector == "because":  # a reason, then the condition
        after = f" because {_remark(env_name, connector, data)}, {_condition(env_name, data)}"
    else:
        after = JOINS[connector] + _condition(env_name, data)
    reply = prefix + c + after
    assert reading_of(env, env_name, reply) is None, reply


@pytest.mark.slow
@pytest.mark.parametrize("connector", CONNECTORS)
@pytest.mark.parametrize("env_name", ENVS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_second_order_after_the_order_rejects_the_reply(
    env_name: str, connector: str, data: st.DataObject
) -> None:
    env = textenvs.make(env_name)
    c, d = _two(env_name, data)
    prefix = data.draw(st.sampled_from(PREFIXES))
    join = JOINS.get(connector, f" {connector} ")
    reply = f"{prefix}{c}{join}{d}"
    assert reading_of(env, env_name, reply) is None, reply


@pytest.mark.parametrize("connector", CONNECTORS)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_squad_order_for_another_squad_after_the_order_is_never_dropped(
    connector: str, data: st.DataObject
) -> None:
    """In Squad Recon one command carries an order per squad: another squad's order
    after the first is part of the command (`A north, B east`) or rejects the reply,
    and after a condition word it always rejects it."""
    env = textenvs.make("squad-recon")
    first, second = data.draw(
        st.lists(st.sampled_from(["A", "B", "C"]), min_size=2, max_size=2, unique=True)
    )
    c = f"{first} {data.draw(st.sampled_from(SQUAD_ORDERS))}"
    d = f"{second} {data.draw(st.sampled_from(SQUAD_ORDERS))}"
    join = JOINS.get(connector, f" {connector} ")
    reply = f"Action: {c}{join}{d}"
    got = reading_of(env, "squad-recon", reply)
    if connector in CONDITION_WORDS:
        assert got is None, (reply, got)
    else:
        assert got is None or d in got.split("; "), (reply, got)
