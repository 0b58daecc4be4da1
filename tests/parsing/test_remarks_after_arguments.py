"""A remark after an order that takes arguments, on its `Action:` line: read as a remark
after a dash, an en dash or a semicolon, as in brackets (reading 6), while a condition, a
second order or a second argument there still rejects the reply.

Megacity's orders with arguments (`excavate`, `support`, `vent`, `conduit`, `district`)
were read with some remarks and not others: "both" opened no remark ("support C2 basalt -
both seams are clear of it"; "off both seams" was read), a direction opened none in
brackets or after a comma ("excavate E1 (east of the fault)", taken for a second
argument), nor did a cell with "'s" ("excavate E1 (C3's stress is 40)"). The same
remarks after `research` behaved alike, except the direction.

And a lone argument after a dash or a semicolon was dropped as a remark ("excavate E1 -
C3" dug E1, "support C2 basalt - timber" built basalt, "research (C3)" researched),
where in brackets after an order with arguments it rejects the reply.
"""

from __future__ import annotations

import itertools

import pytest

import textenvs
from tests.parsing.corpora import reading_of

# Every Megacity order that takes arguments, as its parser writes it back.
ARGUMENT_ORDERS = [
    "excavate E1", "support C2 basalt", "vent B2 east", "conduit B2 B3", "district B3",
]  # fmt: skip
JOINS = {"dash": " — ", "en dash": " – ", "semicolon": "; "}
# Joins where a remark was read before too, for the cases new in them.
MORE_JOINS = {**JOINS, "bracket": " ({})", "comma": ", ", "hyphen": " - "}
REMARKS = [
    "both seams are clear of it", "both are powered", "both of them are clear",
    "both neighbours sit off the fault", "both seams are east of it",
    "it is clear of both seams", "low stress (72), off both seams", "the stress is low",
    "C3's stress is 40", "east of the fault", "the east side is open",
    "not excavate yet, the stress is too high", "the column holds its load and air is 4 there",
]  # fmt: skip
CONDITIONS = ["if", "unless", "provided", "provided that", "once", "only if", "as long as"]
CLAUSES = ["both seams are clear of it", "the stress is low", "C3's stress is 40"]
SECOND_ORDERS = ["excavate C3", "district C3", "research", "scan", "vent A1 north", "wait"]
# "both", an argument or a place that gives the order more than it takes: rejected, as in
# brackets, never shortened.
EXTENDING = [
    "both", "both B3 and C3", "both cells", "both cells are dug", "both times", "C3",
    "east", "C3 too", "and C3", "both seams are clear, excavate C3",
]  # fmt: skip


def _joined(order: str, join: str, after: str) -> str:
    return f"Action: {order}{join.format(after) if '{}' in join else join + after}"


@pytest.mark.parametrize(
    ("order", "join", "remark"),
    list(itertools.product(ARGUMENT_ORDERS, list(MORE_JOINS), REMARKS)),
)
def test_a_remark_after_a_megacity_order_with_arguments_is_read(
    order: str, join: str, remark: str
) -> None:
    env = textenvs.make("megacity")
    reply = _joined(order, MORE_JOINS[join], remark)
    assert reading_of(env, "megacity", reply) == order, reply


@pytest.mark.parametrize("join", list(JOINS))
@pytest.mark.parametrize("order", ARGUMENT_ORDERS)
def test_a_condition_after_a_megacity_order_with_arguments_rejects_it(
    order: str, join: str
) -> None:
    env = textenvs.make("megacity")
    for word, clause in itertools.product(CONDITIONS, CLAUSES):
        reply = _joined(order, JOINS[join], f"{word} {clause}")
        assert reading_of(env, "megacity", reply) is None, reply
        reply = _joined(order, JOINS[join], f"{clause}, {word} the air holds")
        assert reading_of(env, "megacity", reply) is None, reply


@pytest.mark.parametrize("join", list(JOINS))
@pytest.mark.parametrize("order", ARGUMENT_ORDERS)
def test_a_second_order_after_a_megacity_order_with_arguments_rejects_it(
    order: str, join: str
) -> None:
    env = textenvs.make("megacity")
    for second in SECOND_ORDERS:
        for after in (second, f"both seams are clear, so {second}", f"then {second}"):
            reply = _joined(order, JOINS[join], after)
            assert reading_of(env, "megacity", reply) is None, reply


@pytest.mark.parametrize("join", list(MORE_JOINS))
@pytest.mark.parametrize("order", ARGUMENT_ORDERS)
def test_both_or_a_place_that_extends_the_order_still_rejects_it(order: str, join: str) -> None:
    env = textenvs.make("megacity")
    for after in EXTENDING:
        if order.startswith("vent") and after == "east" and join == "semicolon":
            continue  # "vent B2 east; east": the same direction said twice
        reply = _joined(order, MORE_JOINS[join], after)
        got = reading_of(env, "megacity", reply)
        # "conduit B2 B3, C3" is the path B2 B3 C3, as "conduit B2, B3" is B2 B3
        assert got is None or (join == "comma" and got == f"{order} {after}"), reply


@pytest.mark.parametrize("join", list(MORE_JOINS))
@pytest.mark.parametrize("order", ["research", "scan", "wait"])
def test_an_argument_after_an_order_that_takes_none_rejects_it(order: str, join: str) -> None:
    env = textenvs.make("megacity")
    for after in ["C3", "timber", "east", "(C3)"]:
        reply = _joined(order, MORE_JOINS[join], after)
        assert reading_of(env, "megacity", reply) is None, reply
    for remark in REMARKS:
        reply = _joined(order, MORE_JOINS[join], remark)
        assert reading_of(env, "megacity", reply) == order, reply


# The same remarks in the other scenarios with arguments or several orders.
OTHERS = {
    "squad-recon": (
        ["A north", "A+B east", "A north; B east; C attack"],
        ["the ridge hides us", "both camps are still unseen", "both of them are weak",
         "the forest hides us"],
        ["A south", "A attack", "C hold if the camp is weak", "both B and C attack"],
    ),
    "magnetic-field": (
        ["enter 3", "enter A", "right"],
        ["window 2 reads 11", "both windows read 11", "windows 1 and 2 read 00 and 01"],
        ["enter 4", "left", "if window 2 reads 11", "both", "and 4"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("join", list(JOINS))
@pytest.mark.parametrize("env_name", list(OTHERS))
def test_a_remark_after_the_order_in_other_scenarios_is_read(env_name: str, join: str) -> None:
    env = textenvs.make(env_name)
    orders, remarks, rejected = OTHERS[env_name]
    for order in orders:
        want = reading_of(env, env_name, order)
        for remark in remarks:
            reply = _joined(order, JOINS[join], remark)
            assert reading_of(env, env_name, reply) == want, reply
        for after in rejected:
            if env_name == "squad-recon" and order.endswith(after):
                continue
            reply = _joined(order, JOINS[join], after)
            assert reading_of(env, env_name, reply) is None, reply
