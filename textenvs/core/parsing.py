"""Turning free text (typed by a person or written by an LLM) into one command.

The reading invariant every scenario keeps: a reply is executed only if it has exactly one
reading, and that reading is everything the reply orders. Otherwise it is rejected with a
reason that says what was found and how to write it. The shared policy, in five parts:

1. The answer format (`core.answer_format`): the reply is cleaned and bounded; a marked
   command (`Action: <command>` and the other labels, or a JSON action) is authoritative:
   when a reply has one, only that is read (a `Now:`/`Answer:` line of reasoning before
   it aside), and a line right below it that is not a descriptive remark rejects the
   reply (the marked line was not the final word), as does a line of a later paragraph
   that takes the order back or orders something for this turn ("Wait, I meant east").
2. Otherwise, if the whole reply is one command (ignoring case, markdown and punctuation
   at the edges), that is it.
3. Otherwise the reply is prose, read sentence by sentence. A sentence with no order in it
   (no command word, or one used as a noun or a place: "to my left", "the scan showed") is
   context. A sentence with an order must be a short imperative: the command, filler, and
   clauses that are not read.
4. Strict consumption (`core.consumption`) of every command part: each word is part of a
   command phrase, a filler word, or inside a clause that is not read (quotes, negations,
   questions, conditions: `core.clauses`; reasons, up to a joint before an order:
   `core.reasons`; descriptive remarks: `core.remarks`). Any other word (an unknown verb,
   a typo, "then", "next turn", "later", unsupported list or range syntax) rejects the
   reply, naming the word.
5. What stands beside the orders (`core.beside`): a condition anywhere after an order, a
   question about a command after one, or an order held on a condition beside others
   rejects the reply. Among the orders that remain:
   - an order written with an argument it cannot take (`excavate B3 C3`, `submit FAAE`)
     rejects the reply with that order's own reason; it is never shortened;
   - two different commands, or commands written as successive steps ("north, then
     north", orders in two sentences), reject the reply;
   - in scenarios whose one command carries several orders (Squad Recon) the orders are
     merged by the scenario, which rejects conflicts.

Every step is linear in the length of the reply. Scenarios with simple vocabularies use
`PhraseGrammar` (`core.phrases`); richer ones (parameters, several orders in one reply)
pass their own `exact`/`scan` functions to `resolve` or `read`.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from textenvs.core.afterwords import is_afterword
from textenvs.core.answer_format import (
    MAX_COMMAND_CHARS,
    PLAIN_JSON,
    JsonFields,
    Marked,
    clean,
    fold,
    marked_commands,
    normalise,
    prepare,
)
from textenvs.core.beside import Beside, hides_order, is_reason_line
from textenvs.core.clauses import MASK, mask_unread
from textenvs.core.consumption import (
    FILLERS,
    WORD,
    Found,
    account,
    is_mention,
    negated_predicate,
    split_places,
    unread_word,
)
from textenvs.core.memo import memoise_parse
from textenvs.core.parse_error import ParseError, excerpt
from textenvs.core.reasons import is_complement, is_subject, reason_is_last
from textenvs.core.remarks import is_remark, mask_remarks

__all__ = [
    "FILLERS",
    "MASK",
    "MAX_COMMAND_CHARS",
    "PLAIN_JSON",
    "WORD",
    "Found",
    "JsonFields",
    "ParseError",
    "Reading",
    "clean",
    "excerpt",
    "fold",
    "is_complement",
    "is_mention",
    "is_subject",
    "memoise_parse",
    "normalise",
    "nothing_found",
    "read",
    "resolve",
    "several_steps",
    "suggest",
]

A = TypeVar("A", bound=Hashable)

_EDGE_NOISE = " \t\n.,;:!?\"'`*_#>()[]{}<>~"
# Between two orders, these make them successive steps rather than one command.
_STEPS = re.compile(
    r"\b(?:then|next\s+(?:turn|step|move|round)|after\s+(?:that|this)|afterwards?"
    r"|followed\s+by|later|first|second)\b"
)
_LISTED = re.compile(r"[\s,;/|&+*`]*(?:(?:and|or)[\s,;/|&+*`]*)?")
# After an order, these make it several turns ("north twice", "north 2 steps", "wait
# for 3 turns", "north until the wall"; a bare number only where its clause ends: "north
# 2", not "excavate B3 - 2 power").
_NUMBER = r"(?:[2-9]|[1-9]\d+|two|three|four|five|six|seven|eight|nine|ten)"
_UNIT = (
    r"(?:times|x|steps?|tiles?|squares?|cells?|spaces?|slots?|places?|positions?|turns?"
    r"|moves?|rounds?)"
)
_REPEATED = re.compile(
    r"[ \t*`]*(?:twice|thrice|repeatedly|until\b|till\b|all\s+the\s+way|x\s*\d"
    rf"|by\s+{_NUMBER}\b|for\s+{_NUMBER}\s*(?:more\s+)?{_UNIT}\b"
    rf"|(?:several|multiple|a\s+few|many)\s+(?:more\s+)?{_UNIT}\b"
    rf"|{_NUMBER}\s*(?:more\s+)?{_UNIT}\b|{_NUMBER}(?=\s*(?:[.,;:!)\n]|$)))"
)
# After an order, these leave a choice open ("north or east", "excavate B3 (or C3)").
_CHOICE = re.compile(r"[ \t]*[,(]?[ \t]*(?:or|either)\b")
# Where a reason clause starts ("Action: A because ...", "n (since the east is a wall)").
_REASON = re.compile(r"\b(?:because|cause|since|given|so\s+that|in\s+order\s+to)\b", re.I)
# Prose is read a sentence at a time: up to an end mark or a new line.
_SENTENCE = re.compile(r"[^.;!?\n]+[.;!?]*")


@dataclass(frozen=True)
class Reading(Generic[A]):
    """Every order a reply gives, before a scenario decides whether they make one command."""

    orders: list[A]
    #: "the marked parts ..." when the reply has `Action:` lines (then nothing else was
    #: read), else "the reply"
    where: str
    #: orders written as successive steps ("north, then east", "north twice")
    in_sequence: bool
    #: some text was skipped because it was quoted or negated
    skipped: bool
    #: the normalised reply, for messages
    whole: str


def _is_context(folded: str, fillers: frozenset[str]) -> bool:
    """A prose sentence that orders nothing is context, unless it is a fragment: one word
    that is not filler ("excavate B2; C2", "excavate C1..C3")."""
    words = [w for w in WORD.findall(folded) if w not in fillers]
    return len(words) != 1 or MASK in folded


def read(
    text: str,
    *,
    exact: Callable[[str], A | None],
    scan: Callable[[str], list[Found[A]]],
    valid: Sequence[str],
    listed: bool = False,
    fillers: frozenset[str] = FILLERS,
    json_fields: JsonFields = PLAIN_JSON,
) -> Reading[A]:
    """Find every order in a reply by the shared policy (module docstring).

    `exact(s)` reads a whole normalised segment as one command or returns None (it may raise
    `ParseError` for a precise complaint); `scan(s)` finds command phrases in a cleaned text
    whose unread parts are masked (case kept; `fold` it to match case-blind). With
    `listed`, orders side by side ("A north, B east") are one command, not a sequence.
    `fillers` are the words a command part may carry besides its phrases; `json_fields`
    the keys of the scenario's JSON action beyond the action (`answer_format.JsonFields`).
    Raises the reason of the first order that cannot be executed as written, or of the
    first word nothing accounts for.
    """
    cleaned, whole = prepare(text, valid)
    marks = marked_commands(cleaned, json_fields, valid)
    marked = _command_parts(marks, exact, scan)
    # "north?" is the command, edge punctuation aside; "Should A go north?" is a question.
    asks = cleaned.rstrip(_EDGE_NOISE.replace("?", "")).endswith("?") and " " in whole
    if not marked and not asks:
        action = exact(whole)
        if action is not None:
            return Reading([action], "the reply", False, False, whole)
    where = "the marked parts of the reply (Action: lines)" if marked else "the reply"
    for line in marks.below:
        _check_below(line, exact, scan, fillers, valid)
    for line in marks.after:
        _check_below(line, exact, scan, fillers, valid, later=True)
    orders: list[A] = []
    in_sequence = skipped = False
    ordering_sentences = 0
    unread = ""
    beside = Beside(scan)
    segments = marked or [m.group(0) for m in _SENTENCE.finditer(cleaned)]
    for segment in segments:
        if not WORD.search(segment):
            continue  # punctuation only: nothing to read
        original = fold(segment)
        visible = mask_unread(segment, original, keep_quotes=bool(marked))
        beside.look(segment, original, ordered=bool(orders))
        one = exact(normalise(segment)) if marked or MASK not in visible else None
        reason = None if one is not None else _REASON.search(segment)
        # "Action: A, because bit 3 is set": the command before a reason that runs to the
        # end of the part, if the reason hides no order (else all of it is read below)
        if (
            reason
            and reason_is_last(segment, reason.end(), listed=listed)
            and not hides_order(visible, reason.start(), scan, fillers)
        ):
            one = exact(normalise(segment[: reason.start()]))
        if one is not None:
            beside.orders_from(-1)
            orders.append(one)
            ordering_sentences += 1
            continue
        skipped = skipped or MASK in visible
        folded = fold(visible)
        candidates, places = split_places(folded, scan(visible))
        folded = mask_remarks(
            folded, _spans(candidates), _spans(places), fillers, after_orders=bool(marked)
        )
        candidates = [item for item in candidates if folded[item.start] != MASK]  # no remark
        accounting = account(folded, candidates, fillers, listed=listed)
        found = [item for item in accounting.found if not item.consumed]
        if not marked and not found and _is_context(folded, fillers):
            continue  # a sentence that orders nothing is context
        for item in found:
            if item.action is None:
                raise ParseError(item.problem, valid)
        if found:
            beside.orders_from(found[0].start)
        negated = [word for item in found if (word := negated_predicate(original, item))]
        unread = unread or next(iter(accounting.unknown + negated), "")
        ordering_sentences += bool(found)
        for item in found:
            if _CHOICE.match(folded, item.end):
                raise ParseError(
                    f"'{excerpt(segment[item.start : item.end + 12].strip())}' leaves a "
                    "choice open: decide, and send exactly one command.",
                    valid,
                )
            assert item.action is not None
            orders.append(item.action)
            in_sequence = in_sequence or bool(_REPEATED.match(folded, item.end))
        for before, after in itertools.pairwise(found):
            gap = folded[before.end : after.start]
            in_sequence = in_sequence or bool(_STEPS.search(gap))
            in_sequence = in_sequence or (not listed and bool(_LISTED.fullmatch(gap)))
    if orders:
        beside.below(marks.below + marks.after)
        beside.check(valid)
    if not marked and not listed and ordering_sentences > 1:
        in_sequence = True  # "North. North." is two turns
    # A word nothing accounts for rejects the reply; where the orders are rejected anyway
    # (none, two different ones, several turns) that reason is the clearer one.
    if unread and orders and (listed or not (in_sequence or len(set(orders)) > 1)):
        raise unread_word(unread, where, valid)
    return Reading(orders, where, in_sequence, skipped, whole)


def _command_parts(
    marks: Marked, exact: Callable[[str], A | None], scan: Callable[[str], list[Found[A]]]
) -> list[str]:
    """The marked command parts of a reply. Beside an `Action:` line, a `Now:` or
    `Answer:` line before it is reasoning (`_is_reasoning`: "Now: I am at (2,2)" is not
    read; "Now: east" must agree with the Action: line); one after the Action: line is
    read like any marked part."""
    parts = marks.parts
    if all(marks.reasoning):
        return parts
    first = marks.reasoning.index(False)
    return [p for p in parts[:first] if not _is_reasoning(p, exact, scan)] + parts[first:]


def _is_reasoning(
    part: str, exact: Callable[[str], A | None], scan: Callable[[str], list[Found[A]]]
) -> bool:
    """Whether a `Now:`/`Answer:` part before the Action: line is reasoning: no command
    by itself, nothing shaped like a command that cannot be executed ("Answer: 3FA0"
    stays a marked part, and is rejected)."""
    try:
        if exact(normalise(part)) is not None:
            return False
    except ParseError:
        return False
    return all(item.action is not None for item in scan(part))


def _check_below(
    line: str,
    exact: Callable[[str], A | None],
    scan: Callable[[str], list[Found[A]]],
    fillers: frozenset[str],
    valid: Sequence[str],
    *,
    later: bool = False,
) -> None:
    """A line after an Action: line is not read only if it is a remark (`core.remarks`:
    "The west is the edge") or a labelled reason (`core.beside.is_reason_line`) the
    reader may leave unread, or, in a later paragraph (`later`), one that takes nothing
    back and orders only for later turns ("Next I'll move right"); anything else ("B
    east", "Actually, east", "Wait, I meant east", "Just kidding") rejects the reply."""
    if not WORD.search(line) or (later and is_afterword(fold(line), None)):
        return
    visible = mask_unread(line, fold(line))
    folded = fold(visible)
    orders, places = split_places(folded, scan(visible))
    executable = [item for item in orders if item.action is not None]  # not "3+F+A+0"
    if not _is_command(line, exact) and (
        is_remark(folded, _spans(orders), _spans(places), fillers)
        or is_reason_line(line, scan, fillers)
        or (later and is_afterword(fold(line), _spans(executable)))
    ):
        return
    raise ParseError(
        f"'{excerpt(line.strip())}', below the Action: line, may change the order, and only "
        "the Action: line is read: put the whole command on one final line "
        "'Action: <command>', with nothing after it.",
        valid,
    )


def _spans(found: list[Found[A]]) -> list[tuple[int, int]]:
    return [(item.start, item.end) for item in found]


def _is_command(line: str, exact: Callable[[str], A | None]) -> bool:
    """Whether `line` is, by itself, exactly one command."""
    try:
        return bool(line.strip()) and exact(normalise(line)) is not None
    except ParseError:
        return False


def nothing_found(
    reading: Reading[A], valid: Sequence[str], vocabulary: Sequence[str], what: str = "command"
) -> ParseError:
    """The rejection for a reply that gives no order."""
    where = "" if reading.where == "the reply" else f"{reading.where}: "
    reason = f"no {what} found in {where}'{excerpt(reading.whole)}'."
    if reading.skipped:
        reason += (
            " Text in quotes, questions, conditions ('if ...', 'unless ...') and what "
            "follows a negation ('not', 'don't', ...) are not read."
        )
    # Skipped words are often the command itself: suggesting it back would mislead.
    return ParseError(reason, valid, () if reading.skipped else suggest(reading.whole, vocabulary))


def several_steps(reading: Reading[A], valid: Sequence[str]) -> ParseError:
    """The rejection for orders written as successive steps."""
    return ParseError(
        f"{reading.where} gives orders for several turns ('{excerpt(reading.whole)}'); "
        "one reply is one turn: send only this turn's command, on a final line "
        "'Action: <command>'.",
        valid,
    )


def resolve(
    text: str,
    *,
    exact: Callable[[str], A | None],
    scan: Callable[[str], list[Found[A]]],
    valid: Sequence[str],
    vocabulary: Sequence[str] = (),
    describe: Callable[[A], str] = str,
    fillers: frozenset[str] = FILLERS,
    json_fields: JsonFields = PLAIN_JSON,
) -> A:
    """The one command a reply gives, by the shared policy (module docstring); see `read`
    for `exact` and `scan`, and `core.answer_format.JsonFields` for `json_fields`.
    `vocabulary` feeds suggestions."""
    reading = read(
        text, exact=exact, scan=scan, valid=valid, fillers=fillers, json_fields=json_fields
    )
    distinct = list(dict.fromkeys(reading.orders))
    if len(distinct) > 1:
        names = ", ".join(f"'{describe(a)}'" for a in distinct[:4])
        raise ParseError(
            f"{reading.where} names {len(distinct)} different commands ({names}); send "
            "exactly one command, on a final line 'Action: <command>'.",
            valid,
        )
    if not distinct:
        raise nothing_found(reading, valid, vocabulary)
    if reading.in_sequence:
        raise several_steps(reading, valid)
    return distinct[0]


def suggest(text: str, vocabulary: Sequence[str], limit: int = 3) -> list[str]:
    """Close spellings of known phrases for the words in `text` ('nrth' -> 'north'),
    compared in normalised form and given back as the vocabulary spells them."""
    spelled = {normalise(v): v for v in vocabulary}
    words = [w for w in re.findall(r"[a-z0-9]+", text)[:50] if len(w) >= 3]
    out: list[str] = []
    for word in words:
        for match in difflib.get_close_matches(word, list(spelled), n=2, cutoff=0.75):
            if spelled[match] not in out:
                out.append(spelled[match])
    return out[:limit]
