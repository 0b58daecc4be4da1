"""Squad Recon commands: text -> Orders (one order per squad, all in one reply).

Grammar: orders joined by `;` (or `,`, `|`, `and`), each `<squad> <order>`:
squad `A`/`B`/`C` (also `squad a`, `alpha`/`bravo`/`charlie`) or `all`; order `north`,
`south`, `east`, `west`, `hold`, `attack` with aliases (`n`, `MoveNorth`, `HoldPosition`,
`AttackEnemyCamp`, ...). A bare order (`hold`) is an order for all squads.

The shared policy of `textenvs.core.parsing` applies, built from its pieces because one
reply carries several orders: the whole reply is tried as an order list first; otherwise
the orders in the marked parts (`Action:` lines, code, bold) are read; otherwise the
orders found in the prose. Orders found together are merged; a squad given two different
orders is an error, never a guess. In prose a squad must be written `A`/`B`/`C` in
capitals, `squad a`, or by its call sign, and one-letter orders are not read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from textenvs.core.parsing import (
    ParseError,
    excerpt,
    marked_segments,
    memoise_parse,
    normalise,
    prepare,
    suggest,
)
from textenvs.scenarios.squad_recon.state import SQUADS, Order, Orders

ORDER_ALIASES: dict[Order, tuple[str, ...]] = {
    Order.NORTH: ("north", "n", "move north", "movenorth", "go north", "up"),
    Order.SOUTH: ("south", "s", "move south", "movesouth", "go south", "down"),
    Order.EAST: ("east", "e", "move east", "moveeast", "go east", "right"),
    Order.WEST: ("west", "w", "move west", "movewest", "go west", "left"),
    Order.HOLD: ("hold", "h", "hold position", "holdposition", "stay", "wait", "halt"),
    Order.ATTACK: ("attack", "attack enemy camp", "attackenemycamp", "attack camp", "assault"),
}
_ORDER_OF = {alias: order for order, aliases in ORDER_ALIASES.items() for alias in aliases}
CALL_SIGNS = {"alpha": "A", "bravo": "B", "charlie": "C"}
EVERYONE = ("all", "all squads", "everyone", "everybody")
ALL = "all"

VALID = [
    "<squad> <order>, one per squad, joined by ';' (e.g. A north; B east; C attack)",
    "squads: A, B, C (also alpha, bravo, charlie), or all",
    "orders: north, south, east, west (n/s/e/w, MoveNorth, ...), hold (HoldPosition), "
    "attack (AttackEnemyCamp)",
]
VOCABULARY = sorted({*_ORDER_OF, *CALL_SIGNS, "squad"})


def _alternation(words: Sequence[str]) -> str:
    return "|".join(
        re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True)
    )


_ORDERS_RE = _alternation(list(_ORDER_OF))
_LONG_ORDERS_RE = _alternation([a for a in _ORDER_OF if len(a) > 1])
_SEP = r"(?:\s*[:=>]+\s*|\s+)"  # between a squad and its order
_PROSE_SEP = r"(?:\s*[:=>,]+\s*|\s+)"  # prose also reads "Squad A, move north"
# A whole normalised part: "<squad> <order>", "all <order>" or a bare "<order>".
_PART = re.compile(
    rf"^(?:(?:(?:(?:squad|unit|team)\s+)?(?P<who>[abc]|alpha|bravo|charlie)|"
    rf"(?P<all>{_alternation(EVERYONE)})){_SEP})?(?P<what>{_ORDERS_RE})$"
)
_UNKNOWN_PART = re.compile(
    rf"^(?:(?:squad|unit|team)\s+(?P<name>[a-z0-9]+)|(?P<letter>[a-z])){_SEP}(?:{_ORDERS_RE})$"
)
_SPLIT = re.compile(r"\s*(?:[;,|]|\band\b)\s*")
# Inside prose: capital A/B/C, "squad x", a call sign or "all squads"; long order words only.
_PROSE = re.compile(
    rf"(?<![A-Za-z0-9])(?P<who>[ABC]|(?i:(?:squad|unit|team)\s+[abc]|alpha|bravo|charlie|all\s+squads))"
    rf"(?![A-Za-z0-9]){_PROSE_SEP}(?P<what>(?i:{_LONG_ORDERS_RE}))(?![A-Za-z0-9])"
)
_PROSE_UNKNOWN = re.compile(
    rf"(?i:\b(?:squad|unit|team)\s+(?P<name>[a-z])){_PROSE_SEP}(?i:{_LONG_ORDERS_RE})(?![A-Za-z0-9])"
)

Item = tuple[str, Order]  # (squad name or "all", order)


def _squad(word: str) -> str:
    word = word.lower().split()[-1]
    return CALL_SIGNS.get(word, word.upper())


def _unknown(name: str, valid: Sequence[str]) -> ParseError:
    return ParseError(
        f"unknown squad '{excerpt(name.upper(), 12)}': the squads are A, B and C.", valid
    )


def _exact(segment: str, valid: Sequence[str]) -> list[Item] | None:
    """A whole normalised segment read as an order list, or None if any part is not one."""
    items: list[Item] = []
    for raw in _SPLIT.split(segment):
        part = normalise(raw)
        if not part:
            continue
        match = _PART.match(part)
        if match is None:
            unknown = _UNKNOWN_PART.match(part)
            if unknown is not None:
                raise _unknown(unknown.group("name") or unknown.group("letter"), valid)
            return None
        order = _ORDER_OF[re.sub(r"\s+", " ", match.group("what"))]
        who = match.group("who")
        items.append((_squad(who) if who else ALL, order))
    return items or None


def _scan(text: str, valid: Sequence[str]) -> list[Item]:
    """Orders written inside prose (cleaned, not yet case-folded text)."""
    light = re.sub(r"\s+", " ", re.sub(r"[_\-]+", " ", text))
    for match in _PROSE_UNKNOWN.finditer(light):
        name = match.group("name").lower()
        if name not in ("a", "b", "c"):  # "squad d north"
            raise _unknown(name, valid)
    items: list[Item] = []
    for match in _PROSE.finditer(light):
        who = re.sub(r"\s+", " ", match.group("who").lower())
        order = _ORDER_OF[re.sub(r"\s+", " ", match.group("what").lower())]
        items.append((ALL if who == "all squads" else _squad(who), order))
    return items


def _merge(items: list[Item], valid: Sequence[str]) -> Orders:
    """One order per squad; the same order twice is fine, two different ones are not."""
    everyone = {order for who, order in items if who == ALL}
    if len(everyone) > 1:
        names = ", ".join(f"'all {o.value}'" for o in sorted(everyone))
        raise ParseError(f"two different orders for all squads ({names}); send one.", valid)
    every = next(iter(everyone), None)
    chosen: dict[str, Order] = {}
    for who, order in items:
        if who == ALL:
            continue
        before = every if every is not None else chosen.get(who)
        if before is not None and before is not order:
            raise ParseError(
                f"squad {who} is given two different orders ('{before.value}' and "
                f"'{order.value}'); give each squad exactly one order.",
                valid,
            )
        chosen[who] = order
    if every is not None:
        return Orders(tuple((name, every) for name in SQUADS), everyone=every)
    return Orders(tuple(sorted(chosen.items())))


def parse(text: str, valid: Sequence[str] = VALID) -> Orders:
    """Read one line of orders or raise `ParseError` (`valid` goes into its message)."""
    return _memoised_parse(text, tuple(valid))


def _parse(text: str, valid: Sequence[str]) -> Orders:
    cleaned, whole = prepare(text, valid)
    items = _exact(whole, valid)
    if items is not None:
        return _merge(items, valid)
    marked: list[Item] = []
    for segment in marked_segments(cleaned):
        found = _exact(normalise(segment), valid)
        marked += found if found is not None else _scan(segment, valid)
    if marked:
        return _merge(marked, valid)
    found = _scan(cleaned, valid)
    if found:
        return _merge(found, valid)
    raise ParseError(f"no orders found in '{excerpt(whole)}'.", valid, suggest(whole, VOCABULARY))


# Pure in (text, valid): memoised for the few short replies agents keep sending.
_memoised_parse = memoise_parse(_parse)
