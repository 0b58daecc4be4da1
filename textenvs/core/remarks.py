"""Remarks beside a command: which ones are descriptions, and so are not read.

"north (toward the gold)", "excavate B2 (stress 70, off the seam)", "Action: east - the
west is fully explored", "Action: north. The east tile is a flower.": a model often adds
a remark to its command, in brackets, after a dash or a semicolon, or as a sentence
after the command on its `Action:` line. Such a remark is masked (not read) only when it
cannot change the order: it names no command phrase as an order, no word that could
schedule, repeat, extend or cancel one (`REMARK_BLOCKERS`: "north (twice)", "excavate B3
(and C3)", "north (scratch that)"), no letter standing in for a squad or a hex digit
("(A)"), and no number that is not the value of a named quantity ("field 2", "row 1",
"windows 1 and 2", "2nd point"; not "north (3)", "north (go 3)").
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

# A bracketed aside, with places in brackets inside it ("(the Flower at (1,0))").
_PARENTHESIS = re.compile(r"\((?:[^()\n]|\([^()\n]*\))*\)")
_CELL = re.compile(r"[a-wyz]\d{1,2}(?:'s)?")  # "B3", "B3's"
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
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")
# "the field here is 2": a number after these is the value of what came before.
_LINKS = frozenset({
    "is", "are", "was", "were", "reads", "equals", "of", "at", "to", "from", "than", "by",
})  # fmt: skip
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
    r"|tiles?|cells?|squares?|rows?|columns?|quadrants?|regions?|areas?|points?)\b"
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
        prior = "" if sentence else _quantity_before(folded, start, reach, order_starts, fillers)
        if _is_description(folded, start, end, named, fillers, sentence=sentence, prior=prior):
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


# Where an order goes, right after it: "north to (0,1)", "east to the tile reading 2"
# (not "at": "mark at (3,4)" gives mark a target it cannot take).
_PLACE_AFTER_ORDER = re.compile(r"[ \t]*((?:to|towards?)\b)")
_WORD_BEFORE_BRACKET = re.compile(r"([a-z]+)[ \t]*$")


def _quantity_before(
    folded: str, start: int, reach: list[int], order_starts: list[int], fillers: frozenset[str]
) -> str:
    """The word right before a bracket that names a quantity the bracket gives the value
    of ("stress (72)"); empty where it is part of an order ("north (3)") or filler."""
    if not folded.startswith("(", start):
        return ""
    match = _WORD_BEFORE_BRACKET.search(folded, max(0, start - 20), start)
    if match is None or match.group(1) in fillers or match.group(1) in _UNITS:
        return ""
    index = bisect.bisect_right(order_starts, match.start(1))
    return "" if index and reach[index - 1] > match.start(1) else match.group(1)


def _line_remarks(
    folded: str, orders: Sequence[tuple[int, int]], order_starts: list[int]
) -> list[tuple[int, int, bool]]:
    """The remarks of an `Action:` line after its first order: in a sentence that gives
    orders, what follows a comma after its last one ("east, toward the unexplored
    columns"); each later sentence ("The east tile is a flower.", "East is a flower."),
    which must be a description unless a dash or a semicolon joined it to the order
    ("east - unexplored territory", "east; unexplored territory").
    Each is `(start, end, as a sentence)`."""
    remarks = []
    for sentence in _SENTENCE.finditer(folded):
        start, end = sentence.span()
        if end <= orders[0][0]:
            continue
        first, stop = bisect.bisect_left(order_starts, start), bisect.bisect_left(order_starts, end)
        if first < stop:
            last = orders[stop - 1][1]
            comma = folded.find(",", last, end)
            if comma >= 0:
                remarks.append((comma, end, False))
            if place := _PLACE_AFTER_ORDER.match(folded, last):  # "north to (0,1)"
                remarks.append((place.start(1), comma if comma >= 0 else end, False))
        if start > orders[0][0]:  # it may describe what it names ("East is a flower.")
            # after a semicolon or a dash (which cleaning made one) it is a clause joined
            # to the order, read by the same rule as a bracket: "north; unexplored territory"
            joined = folded[start - 1] == ";"
            remarks.append((start, end, not joined))
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


def _is_description(
    folded: str,
    start: int,
    end: int,
    mentions: Sequence[tuple[int, int]],
    fillers: frozenset[str],
    *,
    sentence: bool,
    prior: str = "",
) -> bool:
    """`prior`: the word a bracketed remark follows, where it names a quantity whose
    value the bracket gives ("stress (72)")."""
    found = list(WORD.finditer(folded, start, end))
    # "x=0", "x > 3": a coordinate, not "times"
    words = [
        "x=" if m.group(0) == "x" and _ASSIGNED.match(folded, m.end()) else m.group(0)
        for m in found
    ]
    if any(
        w in REMARK_BLOCKERS and not _harmless(words, i, sentence=sentence)
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
    if words[:1] == ["at"]:
        return False  # "mark (at (3,4))": a target given to the order, not a remark
    cells = [w for w in words if _CELL.fullmatch(w)]  # "B3": a place, as a command names one
    # numbers that are values, and phrases found in the remark (checked below: "(3FA0
    # is entered)")
    values = _values(folded, start, end) | {at for at, _ in mentions}
    named = bool(prior)  # a word so far that names a quantity ("field", "stress", "bits")
    before = prior
    for index, (match, word) in enumerate(zip(found, words, strict=True)):
        counted = word in _UNITS and (before in _COUNTS or before.isdigit())
        if counted and not _states(words, index + 1):
            return False  # "north (two tiles)"; "(28 steps left)" says what remains
        if (
            any(c.isdigit() for c in word)
            and word not in cells
            and match.start() not in values
            and not _is_value(before, named)
            and not (word.isdigit() and _states(words, index + 2))
            and not _ORDINAL.fullmatch(word)  # "(2nd point)": which one, not how many
        ):
            return False  # "north (3)", "north (go 3)", "north (tiles: 3)" count
        named = named or bool(_ORDINAL.fullmatch(before))  # "1st of 4"
        named = named or (before not in fillers and before not in _UNITS and before.isalpha())
        if word not in _TRANSPARENT and not (word == "and" and before.isdigit()):
            before = word  # "windows 1 and 2": the 2 is a value as the 1 is
    if (mentions or cells) and any(w in _STEERING for w in words):
        return False  # "the east is correct", "C3 is the better cell"
    return all(
        _names_a_place(folded, mention, end, fillers)
        or (described and _after_lead(folded, mention, start))
        for mention in mentions
    )


# Between a quantity and its value these change nothing ("the field is only 1 here").
_TRANSPARENT = frozenset({
    "only", "just", "still", "now", "about", "around", "exactly", "already", "roughly",
})  # fmt: skip
# Numbers that are values whatever precedes them: a coordinate pair "(1,0)", one side of
# a comparison or an assignment ("3 > 2", "x=0", "load 30 < 45"), a bit string ("0011").
_VALUES = re.compile(
    r"\(\s*\d+\s*,\s*\d+\s*\)|(?<!\d)\d+(?=\s*(?:[<>=]|->))|(?<=[<>=])\s*\d+|(?<=->)\s*\d+"
    r"|\b[01]{4,8}\b"
)
# A command word after one of these, in a remark that describes, is a place it names
# ("the Flower blocks the east", "the scan shows 2 to the north").
_PLACE_LEADS = frozenset({"the", "to", "of", "from", "toward", "towards", "at", "in"})


_ASSIGNED = re.compile(r"\s*[=<>]")


def _values(folded: str, start: int, end: int) -> set[int]:
    """Where the numbers of a remark that are values (`_VALUES`) start."""
    out = set()
    for match in _VALUES.finditer(folded, start, end):
        out.update(match.start() + m.start() for m in re.finditer(r"\d+", match.group(0)))
    return out


# After a count of units, these make it a state rather than a number of moves: "(28
# steps left)", "(all four slots filled)".
_STATES = frozenset({
    "left", "remaining", "remain", "remains", "filled", "done", "full", "used", "spent", "ago",
})  # fmt: skip


def _states(words: Sequence[str], index: int) -> bool:
    """Whether a state word (`_STATES`) comes at `index` or one word later ("2
    unexplored rows remain")."""
    return any(w in _STATES for w in words[index : index + 2])


def _after_lead(folded: str, mention: tuple[int, int], start: int) -> bool:
    before = WORD.findall(folded, start, mention[0])
    return bool(before) and before[-1] in _PLACE_LEADS


_PLACE_WORDS = frozenset({
    "off", "on", "of", "between", "near", "from", "across", "along", "beside", "under",
})  # fmt: skip


def _harmless(words: Sequence[str], index: int, *, sentence: bool) -> bool:
    """Whether a word of `REMARK_BLOCKERS` is harmless where it stands: "too" before an
    adjective ("C is too weak"), "back to row 0", "x goes from 3 to 4", "next to me",
    "the next rule", "all four slots filled", "off both seams", "both seams are clear",
    "the second character", and in a bracket or after a dash "and air is 4"."""
    word = words[index]
    following = words[index + 1] if index + 1 < len(words) else ""
    preceding = words[index - 1] if index else ""
    if word == "too":
        return (
            len(following) > 2
            and following.isalpha()
            and following not in FILLERS
            and following not in _NOT_ADJECTIVES
        )
    if word == "back":
        return following in ("to", "toward", "towards")
    if word == "x":
        return following in PREDICATES or following == "goes"
    if word == "next":  # "next to me", "the next rule"; not "the next turn"
        return following == "to" or (preceding == "the" and following not in _UNITS)
    if word == "all":  # "all four slots filled", "all three are next to the camp"
        counted = following.isdigit() or following in _COUNTS
        said = words[index + 2 : index + 4]
        return counted and any(w in PREDICATES or w in _STATES for w in said)
    if word == "both":  # "off both seams": the object of a place word
        return preceding in _PLACE_WORDS or _describes_both(words[index + 1 : index + 9])
    if word == "and":  # "- the column holds its load and air is 4 there": a second clause
        if preceding.isdigit() and following.isdigit():
            return True  # "windows 1 and 2 read 00 and 01": values listed
        return not sentence and any(w in PREDICATES for w in words[index + 2 : index + 4])
    if word in ("first", "second", "third"):  # "the second character", "(first point)"
        return preceding == "the" or following in _ORDINAL_UNITS
    return False


def _describes_both(after: Sequence[str]) -> bool:
    """Whether "both" opens a description, as its subject: "both seams are clear of it",
    "both are powered", "both of them are clear"; not "both", "both B3 and C3", "both
    cells", "both times"."""
    if tuple(after[:2]) in (("of", "them"), ("of", "these"), ("of", "those")):
        after = after[2:]
    elif after[:1] and after[0] not in PREDICATES:
        noun, after = after[0], after[1:]  # the things both are: "seams", "neighbours"
        if len(noun) < 3 or not noun.isalpha() or noun in FILLERS or noun in _UNITS:
            return False
    if after and after[0] not in FILLERS and f"{after[0]}s" in PREDICATES:
        after = ["are", *after[1:]]  # "both windows read 11": a plural verb
    return is_subject(after, FILLERS)


def _is_value(before: str, named: bool) -> bool:
    """Whether a number after `before` is a value ("field 2", "bits 1-4", "slot 3", "the
    field here is 2", "toward the 2 in the scan") rather than a count; `named`: a word
    naming a quantity came earlier in the remark. (A count of units is caught before.)"""
    if before.isdigit() or before in _ORDINAL_UNITS or before == "the":
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
    before = WORD.findall(folded, max(0, mention[0] - 20), mention[0])
    if folded[mention[0] : mention[1]] == "left" and before and before[-1] in _UNITS:
        return True  # "(28 steps left)": what remains
    after = [m.group(0) for m in itertools.islice(WORD.finditer(folded, mention[1], end), 8)]
    return is_subject(after, fillers)
