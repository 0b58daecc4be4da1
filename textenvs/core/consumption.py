"""Strict consumption: every word of a command part is accounted for, or it is not read.

A word counts when it is part of a command phrase the scenario found, one of the closed
list of `FILLERS` (words that can never change an order), or inside a clause that is not
read: quotes, negations, questions and conditions (`core.clauses`), and reasons
(`core.reasons`: from `because`, `since`, `so that`, `in order to`, `which`, or `to` + a
word that is not part of a command, to the end of the clause or to a joint before an
order); `so`/`therefore` before any order in its sentence makes the part before it the
reason ("The wall is west, so I'll go north"), after an order the part after it ("north so
I reach the gold"). Any other word is reported, never skipped.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from textenvs.core.parse_error import ParseError, excerpt
from textenvs.core.reasons import CONCLUSIONS, ReasonReader, next_stop, reason_ends, starts_reason
from textenvs.core.words import FILLERS, TEMPORAL, WORD

__all__ = [
    "FILLERS",
    "TEMPORAL",
    "WORD",
    "Accounting",
    "Found",
    "account",
    "is_mention",
    "split_places",
    "unread_word",
]

A = TypeVar("A", bound=Hashable)

# Words that are fillers only where nothing in the sentence is masked: "North is best" is
# an order, "North is not safe" (its predicate negated) a description.
_COPULAS = frozenset({"is", "are", "be", "it's", "am", "seems", "looks"})
_LEADS = frozenset({
    "the", "my", "your", "its", "our", "their", "this", "that", "his", "her", "to", "from",
    "of", "on", "at", "in", "into", "onto", "towards", "toward", "face", "faces", "facing",
    "than", "with", "a", "an",
})  # fmt: skip
_VERBS = frozenset({
    "go", "goes", "going", "move", "moves", "moving", "head", "heads", "heading", "walk",
    "step", "travel", "proceed", "do", "run", "perform", "take", "make", "start",
})  # fmt: skip
# A command word right after one of these tells what was done, not what to do ("the
# field rose when I moved south").
_PAST = frozenset({
    "moved", "went", "came", "headed", "walked", "stepped", "travelled", "traveled", "ran",
    "turned", "rotated", "marked", "entered", "typed", "excavated", "dug", "placed", "built",
    "researched", "scanned", "waited", "revealed", "attacked", "held", "submitted", "was",
    "were",
})  # fmt: skip
_COUNTED = frozenset({
    "steps", "moves", "turns", "tries", "attempts", "slots", "characters", "digits", "cells",
})  # fmt: skip
# "one step left": after a count and one of these, `left` is what remains, not a
# direction ("step left" alone is one; "move one tile south" is an order).
_COUNTED_ONE = frozenset({"step", "move", "turn", "try", "attempt"})
_ONE = frozenset({"one", "1", "a", "another", "last", "final", "single"})
_NOUN_AFTER = re.compile(r"\s*(?:of|side|wall|edge|corner|border|part|half|neighbou?r|points?)\b")
_NEGATED_PREDICATE = re.compile(
    r"[ \t*`]{0,3}((?:is|are|was|were|does|do|did|will|would|can|could|should|seems?)"
    r"[ \t]{1,3}not|isn't|aren't|wasn't|weren't|doesn't|don't|didn't|won't|wouldn't|can't"
    r"|cannot|couldn't|shouldn't|never)\b"
)
_CLAUSE_BREAK = re.compile(r"[\n.;:!?,()\x1f]")


@dataclass(frozen=True)
class Found(Generic[A]):
    """One command phrase found in a text: where, and which command it names.

    `action` is None for a phrase shaped like a command that cannot be executed as written
    (`excavate B3 C3`); `problem` then says why. `bare` marks a single command word that
    can also be a noun or a place ("the scan", "to my left"); `weak` one that is an order
    in prose only after a verb of action ("go left", not "pick up"). `consumed` marks
    grammar words that give no order of their own ("the rest hold")."""

    start: int
    end: int
    action: A | None
    phrase: str
    problem: str = ""
    bare: bool = False
    weak: bool = False
    consumed: bool = False


def non_overlapping(found: Iterable[Found[A]]) -> list[Found[A]]:
    """Longest match wins where phrases overlap ('move north' over 'north')."""
    kept: list[Found[A]] = []
    for item in sorted(found, key=lambda f: (f.start, -(f.end - f.start))):
        if not kept or item.start >= kept[-1].end:
            kept.append(item)
    return kept


def is_mention(folded: str, item: Found[A]) -> bool:
    """Whether a bare command word is used as a noun or a place rather than as an order."""
    if _NOUN_AFTER.match(folded, item.end):
        return True
    clause = _CLAUSE_BREAK.split(folded[max(0, item.start - 60) : item.start])[-1]
    before = WORD.findall(clause)
    if before and (before[-1] in _COUNTED or before[-1] in _PAST):
        return True
    counted = len(before) > 1 and before[-2] in _ONE and before[-1] in _COUNTED_ONE
    if counted and folded[item.start : item.end] == "left":
        return True
    leads, last = 0, ""
    for word in reversed(before):
        if word in _VERBS or (word == "to" and leads == 0):
            return False
        if word in ("along", "together") and last == "with":
            return False  # "north, along with east": a second order
        if word not in _LEADS and (len(word) != 1 or word == "i"):  # "A north": a unit
            break
        leads, last = leads + 1, word
    return leads > 0 or item.weak


def split_places(folded: str, found: Iterable[Found[A]]) -> tuple[list[Found[A]], list[Found[A]]]:
    """The command phrases `found` in `folded` (longest first where they overlap), as
    orders and as places ("to my left", "the scan showed")."""
    orders: list[Found[A]] = []
    places: list[Found[A]] = []
    for item in non_overlapping(found):
        is_place = (item.bare or item.weak) and is_mention(folded, item)
        (places if is_place else orders).append(item)
    return orders, places


@dataclass
class Accounting(Generic[A]):
    """What strict consumption made of one command part."""

    #: the command phrases that count (those in reason clauses dropped)
    found: list[Found[A]]
    #: words accounted for by nothing, in order
    unknown: list[str]


def account(
    folded: str, found: list[Found[A]], fillers: frozenset[str], *, listed: bool = False
) -> Accounting[A]:
    """Account for every word of `folded` (a command part, unread clauses masked) given
    the phrases `found` in it (module docstring). With `listed` (several orders in one
    command), a trailing reason also ends at a comma. Linear in the text."""
    found = sorted(found, key=lambda f: f.start)
    covered = _coverage(len(folded), found)
    trailing_end = reason_ends(folded, listed=listed)
    leading_end = next_stop(folded, "\n.;:!?)\x1f,")
    sentence = _sentence_starts(folded)
    reasons: ReasonReader | None = None  # built at the first reason: most parts have none
    every_word = list(WORD.finditer(folded))
    next_word = {id(a): b for a, b in itertools.pairwise(every_word)}
    words = [w for w in every_word if not covered[w.start()]]
    kept: list[Found[A]] = []
    unknown: list[tuple[int, str]] = []
    dropped_until = next_found = index = 0
    while index < len(words):
        match = words[index]
        word, at = match.group(0), match.start()
        while next_found < len(found) and found[next_found].start < at:
            if found[next_found].start >= dropped_until:
                kept.append(found[next_found])
            next_found += 1
        ordered_before = bool(kept) and kept[-1].start >= sentence[at]
        following = next_word.get(id(match))
        if starts_reason(word, following, covered, ordered_before, trailing_end[at]):
            # to the end of its clause, or to a joint before an order (`core.reasons`)
            clause_end = (trailing_end if ordered_before else leading_end)[at]
            reasons = reasons or ReasonReader(folded, [(f.start, f.end) for f in found], fillers)
            dropped_until, scheduling = reasons.end(at, clause_end)
            if scheduling:
                unknown.append((at, scheduling))  # the reason orders something for later
            while index < len(words) and words[index].start() < dropped_until:
                index += 1
            continue
        if word in CONCLUSIONS and not ordered_before:
            while unknown and unknown[-1][0] >= sentence[at]:
                unknown.pop()  # what came before "so" was the reason
        elif word not in fillers:
            unknown.append((at, word))
        index += 1
    kept += [f for f in found[next_found:] if f.start >= dropped_until]
    if kept and "\x1f" in folded:
        unknown += [(0, w) for w in WORD.findall(folded) if w in _COPULAS][:1]
    return Accounting(kept, [w for _, w in unknown])


def negated_predicate(original: str, item: Found[A]) -> str:
    """The negated verb right after an order word ("North isn't safe", "north does not
    work"): the order word is then the subject of a description. Empty if none."""
    match = _NEGATED_PREDICATE.match(original, item.end)
    return match.group(1) if match else ""


def _coverage(length: int, found: list[Found[A]]) -> list[bool]:
    change = [0] * (length + 2)
    for item in found:
        change[item.start] += 1
        change[item.end] -= 1
    covered, depth = [], 0
    for delta in change:
        depth += delta
        covered.append(depth > 0)
    return covered


def _sentence_starts(folded: str) -> list[int]:
    out, start = [], 0
    for index, ch in enumerate(folded):
        out.append(start)
        if ch in "\n.;!?":
            start = index + 1
    out.append(start)
    return out


def unread_word(word: str, where: str, valid: Sequence[str]) -> ParseError:
    """The rejection for a word of a command part that nothing accounts for."""
    reason = f"'{excerpt(word, 24)}' in {where} is not part of any command"
    if word in TEMPORAL:
        reason += (
            ": orders for later turns are not read; send only this turn's command, "
            "on a final line 'Action: <command>'."
        )
    else:
        reason += ", and every word of an order is read: send the command alone, on a final "
        reason += "line 'Action: <command>'."
    return ParseError(reason, valid)
