"""Squad Recon's words: orders and their aliases, squads, fillers, and the token table the
parser (`parse.py`) reads a reply with."""

from __future__ import annotations

import re
from collections.abc import Sequence

from textenvs.core.parsing import FILLERS as CORE_FILLERS
from textenvs.core.parsing import MASK
from textenvs.scenarios.squad_recon.state import Order

# Where a squad stays when it holds: "C stays back", "keep C in place" (`KEPT`).
_IN_PLACE = (
    "back", "behind", "there", "still", "put", "in place", "in position", "where it is",
    "where they are",
)  # fmt: skip
ORDER_ALIASES: dict[Order, tuple[str, ...]] = {
    Order.NORTH: ("north", "n", "move north", "movenorth", "go north", "up"),
    Order.SOUTH: ("south", "s", "move south", "movesouth", "go south", "down"),
    Order.EAST: ("east", "e", "move east", "moveeast", "go east", "right"),
    Order.WEST: ("west", "w", "move west", "movewest", "go west", "left"),
    Order.HOLD: (
        "hold", "h", "hold position", "holdposition", "stay", "wait", "halt", "holds", "stays",
        "holds position", "holding position",
        # the rules' "hold (stay)": "C stays back", "B remains in place"
        *(f"{verb} {where}" for verb in ("stay", "stays") for where in _IN_PLACE),
        *(f"{verb} {where}" for verb in ("remain", "remains") for where in _IN_PLACE[4:]),
        "hold back", "holds back", "holding back",
    ),
    Order.ATTACK: (
        "attack", "attack enemy camp", "attackenemycamp", "attack camp", "assault", "attacks",
        "attack the camp", "attack the enemy camp",
    ),
}  # fmt: skip
ORDER_OF = {alias: order for order, aliases in ORDER_ALIASES.items() for alias in aliases}
CALL_SIGNS = {"alpha": "A", "bravo": "B", "charlie": "C"}
EVERYONE = ("all squads", "all units", "every squad", "everyone", "everybody", "all")
ALL = "all"
# Words allowed between squads and their order ("A should move to the north").
FILLERS = frozenset({
    "should", "will", "shall", "must", "can", "to", "move", "moves", "moving", "go", "goes",
    "going", "head", "heads", "heading", "advance", "advances", "please", "now", "the",
    "squad's", "squads'", "i'll", "let", "orders", "order", "are", "at",
})  # fmt: skip
COPULAS = frozenset({"is", "are", "was", "were", "stands", "sits"})
# Every word a reply of orders may carry besides the grammar ("a" is squad A, not filler).
READ_FILLERS = (CORE_FILLERS | FILLERS) - {"a"}

VALID = [
    "<squads> <order>, joined by ';' (e.g. A north; B east; C attack, or A+B north)",
    "squads: A, B, C (also alpha, bravo, charlie), a group (A+B, A and B), or all",
    "orders: north, south, east, west (n/s/e/w, MoveNorth, ...), hold (HoldPosition), "
    "attack (AttackEnemyCamp)",
]
VOCABULARY = sorted({*ORDER_OF, *CALL_SIGNS, "squad"})


def _alternation(words: Sequence[str]) -> str:
    return "|".join(
        re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True)
    )


# One token; matched on folded text (lower case, `-`/`_` as spaces), in this order.
TOKEN = re.compile(
    rf"(?P<mask>{MASK}+)"
    rf"|\b(?P<order>{_alternation(list(ORDER_OF))})\b"
    r"|\b(?P<exception>except|excepting|apart\s+from|other\s+than|besides|save\s+for"
    rf"|(?:{_alternation(EVERYONE)})\s+but)\b"
    r"|\b(?P<rest>(?:all|everyone|everybody)\s+else|the\s+rest|(?:the\s+)?others"
    r"|(?:the\s+)?(?:other|remaining)\s+(?:squads|units))\b"
    rf"|\b(?P<every>{_alternation(EVERYONE)})\b"
    r"|\b(?P<keyword>squads?|units?|teams?)\b"
    r"|\b(?P<keep>keep)\b"
    r"|\b(?P<squad>alpha|bravo|charlie|[a-z])\b"
    r"|\b(?P<step>then|next\s+(?:turn|step|move|round)|after\s+(?:that|this)|afterwards?"
    r"|later)\b"
    r"|\b(?P<choice>or|either)\b"
    r"|\b(?P<same>too|as\s+well|also|likewise|similarly|ditto|same|follows?|following)\b"
    r"|\b(?P<join>and)\b"
    r"|(?P<word>[a-z0-9][a-z0-9']*)"
    r"|(?P<sep>[;|.!\n])"
    r"|(?P<joiner>->|[,/&+:=>])"
)

# After "keep" and squads, where they stay: "keep C in place", "keep B and C back".
KEPT = re.compile(rf"(?:{_alternation(_IN_PLACE)})\b")
# After a direction, these make it a place ("north of B", "the south edge", "the
# north-east corner").
PLACE_AFTER = re.compile(
    r"\s*(?:(?:north|south|east|west)\s+)?(?:of|sides?|edges?|corners?|borders?|walls?|half"
    r"|parts?)\b"
)
# After "C is", what makes an order of it: "C is to attack", "C is going east".
ORDER_LIKE = re.compile(r"(?:to|\w+ing|go|move|head|advance)$")

Item = tuple[str, Order]  # (squad name or "all", order)
# What may stand between tokens of a whole-reply command ("A: north", `**B** east`); any
# other character (a letter of another script, an emoji) means it is not one.
IGNORABLE = re.compile(r"[\s*#>()\[\]{}\"'`~]*")
