"""Remarks beside a command: which ones are descriptions, and so are not read.

"north (toward the gold)", "excavate B2 (stress 70, off the seam)", "Action: east - the
west is fully explored", "Action: north. The east tile is a flower.": a model often adds
a remark to its command, in brackets, after a dash, or as a sentence after the command
on its `Action:` line. Such a remark is masked (not read) only when it cannot change the
order: it names no command phrase as an order, no word that could schedule, repeat,
extend or cancel one (`REMARK_BLOCKERS`: "north (twice)", "excavate B3 (and C3)", "north
(scratch that)"), no letter standing in for a squad or a hex digit ("(A)"), and no
number that is not the value of a named quantity ("field 2", "row 1"; not "north (3)",
"north (go 3)").
A command word in it must be a place or a description's subject ("the north neighbour
reads 2", "the west is fully explored", "East is a flower"), in a remark with no word
that goes, chooses or judges ("I meant the east", "the east is correct"). Any other
remark is read, so its words reject the reply.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence

from textenvs.core.reasons import EVALUATIVE, PREDICATES, is_subject
from textenvs.core.words import TEMPORAL, WORD

_PARENTHESIS = re.compile(r"\([^()\n]*\)")
_CELL = re.compile(r"[a-wyz]\d{1,2}")
_SENTENCE = re.compile(r"[^.;!?\n]+[.;!?\n]*")
REMARK_BLOCKERS = TEMPORAL | frozenset({
    "times", "x", "all", "every", "each", "repeat", "repeatedly", "again", "until", "till",
    "too", "also", "well", "plus", "and", "or", "more", "both", "either", "except", "but",
    "instead", "rather", "maybe", "perhaps", "not", "no", "never", "nope", "nah",
    # taking the order back
    "cancel", "cancelled", "canceled", "ignore", "skip", "disregard", "scratch", "scrap",
    "forget", "undo", "redo", "retract", "revoke", "void", "invalid", "kidding", "joke",
    "joking", "abort", "stop", "hold", "wait", "wrong", "incorrect", "mistake", "typo",
    "error", "oops", "sorry", "actually", "correction", "change", "changed", "reverse",
    "mean", "meant",
    "reversed", "opposite", "test", "draft", "tentative", "provisional", "suggestion",
    # going on past this turn
    "keep", "continue", "continuing", "onward", "onwards", "further", "repeating",
})  # fmt: skip
# A count of these repeats the order ("north (two tiles)"); one alone is a noun ("the
# east tile"), and a number after one is no value ("north (tiles: 3)", "(distance 2)").
_UNITS = frozenset({
    "steps", "step", "tiles", "tile", "squares", "square", "cells", "cell", "spaces",
    "space", "slots", "slot", "places", "positions", "turns", "turn", "moves", "move",
    "rounds", "round", "distance", "range", "length", "far", "count", "amount", "number",
})  # fmt: skip
_COUNTS = frozenset({
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "few", "several",
    "many", "multiple", "some", "couple", "dozen",
})  # fmt: skip
# Words that turn a remark naming a direction into an order or a choice ("go to the east
# side", "the east is correct", "East is my destination").
_STEERING = EVALUATIVE | frozenset({
    "go", "goes", "going", "move", "moving", "head", "heading", "walk", "travel", "proceed",
    "run", "take", "choose", "chose", "select", "opt", "decide", "want", "wanted", "prefer",
    "meant", "mean", "intended", "closer", "closest", "nearer", "nearest", "shorter",
    "shortest", "faster", "quicker", "easier", "one", "destination", "objective", "aim",
    "intention", "decision", "selection", "preference", "call", "bet", "vote", "favourite",
    "favorite", "priority", "direction", "course", "what", "where", "should", "must",
    "will", "i'll", "let's", "shall", "would", "could", "can", "need", "needs",
})  # fmt: skip
# A command word followed by one of these names a place ("the north neighbour").
_NOUN_AFTER = re.compile(
    r"\s*(?:of|sides?|walls?|edges?|corners?|borders?|parts?|half|halves|neighbou?rs?"
    r"|tiles?|cells?|squares?|rows?|columns?|quadrants?|regions?|areas?)\b"
)


def mask_remarks(
    folded: str,
    orders: Sequence[tuple[int, int, bool]],
    mentions: Sequence[tuple[int, int]],
    fillers: frozenset[str],
    *,
    after_orders: bool = False,
) -> str:
    """`folded` with its remarks masked (module docstring): bracketed asides, and with
    `after_orders` (an `Action:` line) every sentence after the first that gives an
    order. `orders` are the spans of the command phrases found as orders (with whether
    each is a single word, which a remark may describe: "East is a flower"), `mentions`
    those found as places. Linear in the text."""
    orders = sorted(orders)
    order_starts = [start for start, _, _ in orders]
    reach = list(itertools.accumulate((end for _, end, _ in orders), max))
    mentions = sorted(mentions)
    mention_starts = [start for start, _ in mentions]
    stretches = [(*m.span(), False) for m in _PARENTHESIS.finditer(folded)]
    if after_orders and orders:
        first = next(m.end() for m in _SENTENCE.finditer(folded) if m.end() > orders[0][0])
        stretches += [(*m.span(), True) for m in _SENTENCE.finditer(folded, first)]
    spans = []
    for start, end, sentence in stretches:
        # an order starting before the remark and reaching into it (phrases sorted by
        # start, with the furthest end so far: log time) keeps it read
        first_inside = bisect.bisect_left(order_starts, start)
        if first_inside and reach[first_inside - 1] > start:
            continue
        inside = orders[first_inside : bisect.bisect_left(order_starts, end)]
        if any(not bare or stop > end for _, stop, bare in inside):
            continue
        named = [(a, b) for a, b, _ in inside] + mentions[
            bisect.bisect_left(mention_starts, start) : bisect.bisect_left(mention_starts, end)
        ]
        if _is_description(folded, start, end, named, fillers, sentence=sentence):
            spans.append((start, end))
    if not spans:
        return folded
    spans.sort()
    out, last = [], 0
    for start, end in spans:
        start = max(start, last)
        out += [folded[last:start], "\x1f" * max(0, end - start)]
        last = max(last, end)
    return "".join([*out, folded[last:]])


def is_remark(
    folded: str,
    orders: Sequence[tuple[int, int, bool]],
    mentions: Sequence[tuple[int, int]],
    fillers: frozenset[str],
) -> bool:
    """Whether all of `folded` (say a line below an `Action:` line) is a remark that may
    be left unread (module docstring), given the command phrases found in it."""
    if any(not bare for _, _, bare in orders):
        return False
    named = [(start, end) for start, end, _ in orders] + list(mentions)
    return _is_description(folded, 0, len(folded), named, fillers, sentence=False)


def _is_description(
    folded: str,
    start: int,
    end: int,
    mentions: Sequence[tuple[int, int]],
    fillers: frozenset[str],
    *,
    sentence: bool,
) -> bool:
    words = [m.group(0) for m in WORD.finditer(folded, start, end)]
    if any(w in REMARK_BLOCKERS for w in words):
        return False
    described = any(w in PREDICATES for w in words[1:]) or any(w.endswith("'s") for w in words)
    if sentence and not described:
        return False  # a sentence must describe ("The camp is unseen"; not "Forget it")
    if len(words) < 3 and any(len(w) == 1 and w.isalpha() and w != "i" for w in words):
        return False  # "(A)", "(C, B)": a squad or a hex digit
    cells = [w for w in words if _CELL.fullmatch(w)]  # "B3": a place, as a command names one
    for before, word in itertools.pairwise(["", *words]):
        if word in _UNITS and (before in _COUNTS or before.isdigit()):
            return False  # "north (two tiles)"
        # "field 2", "bits 1-4" are values; "north (3)", "north (go 3)" counts
        unlabelled = not before or before in fillers or before in _UNITS
        count = any(c.isdigit() for c in word) and word not in cells
        if count and unlabelled and not before.isdigit():
            return False
    if (mentions or cells) and any(w in _STEERING for w in words):
        return False  # "the east is correct", "C3 is the better cell"
    return all(_names_a_place(folded, mention, end, fillers) for mention in mentions)


def _names_a_place(
    folded: str, mention: tuple[int, int], end: int, fillers: frozenset[str]
) -> bool:
    """Whether a command word in a remark is a place ("the north neighbour") or the
    subject of a description ("the west is fully explored")."""
    if _NOUN_AFTER.match(folded, mention[1]):
        return True
    after = [m.group(0) for m in itertools.islice(WORD.finditer(folded, mention[1], end), 8)]
    return is_subject(after, fillers)
