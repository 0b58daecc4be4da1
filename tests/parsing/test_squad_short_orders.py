"""Squad Recon's short prose orders: a synonym of hold, an order after `so`, an exception.

The rules: "Orders: north, south, east, west (move one cell), hold (stay), attack",
"Several squads can share one order", "A squad you do not mention holds", "Giving one
squad two different orders ... makes the command unreadable", and "conditions and
reasons are not carried out".

- A squad that stays where it is holds ("C stays back", "C remains in place", "keep B
  and C in place"); "keep" before another order ("keep C north", "A keep north") goes on
  past this turn and is not read.
- After an order, `so` followed by another squad's order is that squad's order ("A
  north, so B attacks" is A north and B attack, as "The camp is close, so C attack" is C
  attack in the corpus); `so that` opens a purpose, not carried out ("A north, so that B
  can attack" orders A only).
- An exception stays rejected: the rules' grammar has none, `all` orders every squad (so
  "all east, except B attacks" gives B two orders), and the corpus expects "all but C
  north", "all squads north except C", "Except C, all north" and "everyone but B attack"
  rejected.
"""

from __future__ import annotations

import pytest

import textenvs
from tests.parsing.corpora import canonical
from textenvs.core.parsing import ParseError

HOLDING = [
    "stays back", "stays behind", "stays in place", "stays put", "stays there", "stays still",
    "stays where it is", "remains in place", "remains where it is", "holds back",
]  # fmt: skip
PREFIXES = ["", "Action: ", "I will scout with A.\nAction: "]


def _read(reply: str) -> str | None:
    try:
        return canonical("squad-recon")(textenvs.make("squad-recon").parse(reply))
    except ParseError:
        return None


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("holding", HOLDING)
def test_a_squad_that_stays_holds(holding: str, prefix: str) -> None:
    assert _read(f"{prefix}C {holding}") == "C hold"
    assert _read(f"{prefix}A north, C {holding}") == "A north; C hold"
    assert _read(f"{prefix}A north; B east; C {holding}") == "A north; B east; C hold"
    assert _read(f"{prefix}C attack; C {holding}") is None  # two orders for C


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize(
    ("reply", "expect"),
    [
        ("keep C in place", "C hold"), ("keep C back", "C hold"),
        ("keep B and C in place", "B hold; C hold"), ("C, keep back", "C hold"),
        ("A north, keep C in place", "A north; C hold"),
        ("keep B and C back, A north", "A north; B hold; C hold"),
        ("keep everyone in place", "all hold"),
        ("keep C holding position", "C hold"),
    ],
)  # fmt: skip
def test_keeping_a_squad_in_place_holds_it(reply: str, expect: str, prefix: str) -> None:
    assert _read(prefix + reply) == expect, prefix + reply


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize(
    "reply",
    ["keep C north", "A keep north", "A north, keep going", "keep C moving",
     "A north; C keep north", "keep it back", "keep C in place; keep C north",
     "keep A in place; A north", "C stays back, then B east", "C stays back next turn"],
)  # fmt: skip
def test_keep_before_another_order_is_not_read(reply: str, prefix: str) -> None:
    assert _read(prefix + reply) is None, prefix + reply


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize(
    ("reply", "expect"),
    [
        ("A north, so B attacks", "A north; B attack"),
        ("A north so B attacks", "A north; B attack"),
        ("A north, so C stays back", "A north; C hold"),
        ("B attacks, so A north", "A north; B attack"),
        ("A north, so that B can attack", "A north"),
        ("A north, so B attacks later", None),
        ("A north, so A attacks", None),
        ("A north, so B attacks if the camp is weak", None),
    ],
)  # fmt: skip
def test_an_order_after_so_is_that_squads_order(
    reply: str, expect: str | None, prefix: str
) -> None:
    assert _read(prefix + reply) == expect, prefix + reply


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize(
    "reply",
    ["all but C north", "all east, except B attacks", "all squads north except C",
     "Except C, all north", "everyone but B attack", "all north except C, who stays back",
     "all north apart from C"],
)  # fmt: skip
def test_an_exception_is_still_rejected(reply: str, prefix: str) -> None:
    assert _read(prefix + reply) is None, prefix + reply
