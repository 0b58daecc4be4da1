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
from textenvs.core.words import FILLERS, TEMPORAL, WORD

_PARENTHESIS = re.compile(r"\([^()\n]*\)")
_CELL = re.compile(r"[a-wyz]\d{1,2}")
_SENTENCE = re.compile(r"[^.;!?\n]+[.;!?\n]*")
# Words that take an order back or put another in its place ("Wait, I meant east",
# "scratch that", "east instead", "no, east").
WITHDRAWING = frozenset({
    "instead", "rather", "maybe", "perhaps", "not", "no", "never", "nope", "nah",
    "cancel", "cancelled", "canceled", "ignore", "skip", "disregard", "scratch", "scrap",
    "forget", "undo", "redo", "retract", "revoke", "void", "invalid", "kidding", "joke",
    "joking", "abort", "stop", "hold", "wait", "wrong", "incorrect", "mistake", "typo",
    "error", "oops", "sorry", "actually", "correction", "change", "changed", "reverse",
    "mean", "meant", "reversed", "opposite", "test", "draft", "tentative", "provisional",
    "suggestion", "other", "others", "back", "withdraw", "reconsider", "rescind",
    "premature", "obsolete", "outdated", "superseded", "replaced", "overridden", "override",
    "overrides", "amended", "revised", "hasty", "rash", "unwise", "stale",
})  # fmt: skip
REMARK_BLOCKERS = TEMPORAL | WITHDRAWING | frozenset({
    "times", "x", "all", "every", "each", "repeat", "repeatedly", "again", "until", "till",
    "too", "also", "well", "plus", "and", "or", "more", "both", "either", "except", "but",
    "farther", "same", "likewise", "similarly", "ditto",
    # going on past this turn
    "keep", "continue", "continuing", "onward", "onwards", "further", "repeating", "rest",
    "continuously", "constantly", "forever", "indefinitely", "always", "nonstop",
    "permanently", "forward", "henceforth",
})  # fmt: skip
# "slot 3", "row 2": which one, not how many.
_ORDINAL_UNITS = frozenset({
    "slot", "row", "column", "cell", "tile", "square", "position", "window", "point", "bit",
})  # fmt: skip
# "the field here is 2": a number after these is the value of what came before.
_LINKS = frozenset({"is", "are", "was", "were", "reads", "equals", "of", "at"})
# A sentence remark that starts with one of these has a subject: it describes.
_SUBJECTS = frozenset({
    "the", "this", "that", "these", "those", "it", "its", "there", "my", "our", "a", "an",
})  # fmt: skip
# Phrases that make the order last ("north (as far as it goes)", "east, from now on").
_GOING_ON = re.compile(r"\bas far\b|\bfrom now on\b|\bfor good\b")
# After "too" these make it "as well" ("C too, now", "B too in two turns").
_NOT_ADJECTIVES = frozenset({
    "now", "then", "next", "later", "after", "before", "again", "in", "on", "at", "for",
    "from", "with", "by", "as", "and", "please", "this", "that",
})  # fmt: skip
# A count of these repeats the order ("north (two tiles)"); one alone is a noun ("the
# east tile"), and a number after one is no value ("north (tiles: 3)", "(distance 2)").
_UNITS = frozenset({
    "steps", "step", "tiles", "tile", "squares", "square", "cells", "cell", "spaces",
    "space", "slots", "slot", "places", "positions", "turns", "turn", "moves", "move",
    "rounds", "round", "distance", "range", "length", "count", "amount", "number",
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
    "meant", "mean", "intended", "i'll", "let's", "need", "needs",
})  # fmt: skip
# A command word followed by one of these names a place ("the north neighbour").
_NOUN_AFTER = re.compile(
    r"\s*(?:of|sides?|walls?|edges?|corners?|borders?|parts?|half|halves|neighbou?rs?"
    r"|tiles?|cells?|squares?|rows?|columns?|quadrants?|regions?|areas?)\b"
)


def mask_remarks(
    folded: str,
    orders: Sequence[tuple[int, int]],
    mentions: Sequence[tuple[int, int]],
    fillers: frozenset[str],
    *,
    after_orders: bool = False,
) -> str:
    """`folded` with its remarks masked (module docstring): bracketed asides, and with
    `after_orders` (an `Action:` line) every sentence after the first that gives an
    order. `orders` are the spans of the command phrases found as orders (a remark may
    describe one: "East is a flower"), `mentions` those found as places. Linear in the
    text."""
    orders = sorted(orders)
    order_starts = [start for start, _ in orders]
    reach = list(itertools.accumulate((end for _, end in orders), max))
    mentions = sorted(mentions)
    mention_starts = [start for start, _ in mentions]
    stretches = [(*m.span(), False) for m in _PARENTHESIS.finditer(folded)]
    if after_orders and orders:
        stretches += _line_remarks(folded, orders, order_starts)
    spans = []
    for start, end, sentence in stretches:
        # an order starting before the remark and reaching into it (phrases sorted by
        # start, with the furthest end so far: log time) keeps it read
        first_inside = bisect.bisect_left(order_starts, start)
        if first_inside and reach[first_inside - 1] > start:
            continue
        inside = orders[first_inside : bisect.bisect_left(order_starts, end)]
        if any(stop > end for _, stop in inside):
            continue
        named = (
            inside
            + mentions[
                bisect.bisect_left(mention_starts, start) : bisect.bisect_left(mention_starts, end)
            ]
        )
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


def _line_remarks(
    folded: str, orders: Sequence[tuple[int, int]], order_starts: list[int]
) -> list[tuple[int, int, bool]]:
    """The remarks of an `Action:` line after its first order: in a sentence that gives
    orders, what follows a comma after its last one ("east, toward the unexplored
    columns"); each later sentence ("The east tile is a flower.", "East is a flower."),
    which must be a description unless a dash opened it ("east - unexplored territory").
    Each is `(start, end, as a sentence)`."""
    remarks = []
    for sentence in _SENTENCE.finditer(folded):
        start, end = sentence.span()
        if end <= orders[0][0]:
            continue
        first, stop = bisect.bisect_left(order_starts, start), bisect.bisect_left(order_starts, end)
        if first < stop:
            comma = folded.find(",", orders[stop - 1][1], end)
            if comma >= 0:
                remarks.append((comma, end, False))
        if start > orders[0][0]:  # it may describe what it names ("East is a flower.")
            dash = folded[max(0, start - 2) : start] == " ;"  # cleaning made it a clause break
            remarks.append((start, end, not dash))
    return remarks


def is_remark(
    folded: str,
    orders: Sequence[tuple[int, int]],
    mentions: Sequence[tuple[int, int]],
    fillers: frozenset[str],
) -> bool:
    """Whether all of `folded` (say a line below an `Action:` line) is a remark that may
    be left unread (module docstring), given the command phrases found in it."""
    named = [*orders, *mentions]
    return _is_description(folded, 0, len(folded), named, fillers, sentence=False)


# A later turn a plan speaks of ("Next I'll move right", "then east"; not "then again").
_LATER = re.compile(
    r"\b(?:next|then(?![ \t]+again\b)|after[ \t]+(?:that|this)|afterwards?|later)\b"
)
# Phrases that take an order back with no word of `WITHDRAWING` in them.
_TAKING_BACK = re.compile(
    r"\b(?:second[ \t]+thoughts?|never[ \t]+mind|hold[ \t]+on|hang[ \t]+on|belay|strike"
    r"|make[ \t]+(?:that|it)|intended|switch|swap|whoops|woops)\b"
)


def is_afterword(folded: str, orders: Sequence[tuple[int, int]]) -> bool:
    """Whether a line of a later paragraph than an `Action:` line's may be left unread:
    it takes nothing back (`WITHDRAWING`: "Wait, I meant east", "Scratch that", "No,
    east") and every order it names is one for a later turn ("Next I'll move right",
    "Then B attacks"). A description ("That keeps the sweep on row 1") names none."""
    if _TAKING_BACK.search(folded) or any(w in WITHDRAWING for w in WORD.findall(folded)):
        return False
    return all(_LATER.search(folded, 0, start) for start, _ in orders)


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
    if any(
        w in REMARK_BLOCKERS and not _intensifies(w, words[i + 1 : i + 2])
        for i, w in enumerate(words)
    ):
        return False
    if _GOING_ON.search(" ".join(words)):
        return False
    described = any(w in PREDICATES for w in words[1:]) or any(w.endswith("'s") for w in words)
    if sentence and not (described or (words and words[0] in _SUBJECTS)):
        return False  # a sentence must describe ("The camp is unseen"; not "Forget it")
    if len(words) < 3 and any(len(w) == 1 and w.isalpha() and w != "i" for w in words):
        return False  # "(A)", "(C, B)": a squad or a hex digit
    cells = [w for w in words if _CELL.fullmatch(w)]  # "B3": a place, as a command names one
    named = False  # a word so far that names a quantity ("field", "stress", "bits")
    for before, word in itertools.pairwise(["", *words]):
        if word in _UNITS and (before in _COUNTS or before.isdigit()):
            return False  # "north (two tiles)"
        if any(c.isdigit() for c in word) and word not in cells and not _is_value(before, named):
            return False  # "north (3)", "north (go 3)", "north (tiles: 3)" count
        named = named or (before not in fillers and before not in _UNITS and before.isalpha())
    if (mentions or cells) and any(w in _STEERING for w in words):
        return False  # "the east is correct", "C3 is the better cell"
    return all(_names_a_place(folded, mention, end, fillers) for mention in mentions)


def _intensifies(word: str, following: Sequence[str]) -> bool:
    """'too' before an adjective ("C is too weak") says how much, not "as well"."""
    return (
        word == "too"
        and bool(following)
        and len(following[0]) > 2
        and following[0].isalpha()
        and following[0] not in FILLERS
        and following[0] not in _NOT_ADJECTIVES
    )


def _is_value(before: str, named: bool) -> bool:
    """Whether a number after `before` is a value ("field 2", "bits 1-4", "slot 3", "the
    field here is 2") rather than a count; `named`: a word naming a quantity came
    earlier in the remark."""
    if before.isdigit() or before in _ORDINAL_UNITS:
        return True
    if before in _LINKS:
        return named
    return bool(before) and before not in _UNITS and before not in FILLERS


def _names_a_place(
    folded: str, mention: tuple[int, int], end: int, fillers: frozenset[str]
) -> bool:
    """Whether a command word in a remark is a place ("the north neighbour") or the
    subject of a description ("the west is fully explored")."""
    if _NOUN_AFTER.match(folded, mention[1]):
        return True
    after = [m.group(0) for m in itertools.islice(WORD.finditer(folded, mention[1], end), 8)]
    return is_subject(after, fillers)
