"""Reason clauses: where they start, where they end, and when what follows in them is an
order after all.

A reason clause starts at `because`, `since`, `so that`, `in order to`, `which`, or `to` +
a word that is not part of a command ("north to reach the gold"); `so` after an order
starts a purpose. It runs to the end of its clause (`;`, `.`, `)`, a new line, a comma
before a word that sequences orders, and in listed grammars any comma), and is not read.

Two things end it earlier, because a reason must not hide an order:
- a joint (a comma, a colon, `and`, `but`, `so`, `plus`, `also`, `as well as`, `then`,
  ...) followed, in its stretch of the clause, by a command phrase used as an order:
  "north, because it is safe, and east" reads `and east` (two commands: rejected), while
  "because the east and west are walls" stays a reason (`the east` is a place, `west` the
  subject of a description: a verb and a word that is not filler follow it);
- a command phrase anywhere in the reason together with a word that schedules
  ("north because it is safe: then east", "A north because B east then"): the reason
  orders something for a later turn, and the reply is rejected naming that word;
- a reason that says nothing but command phrases and filler ("north because west", "A
  north since A south"): it explains nothing, and its phrases are orders.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Sequence

from textenvs.core.clauses import MASK
from textenvs.core.words import TEMPORAL, WORD

REASON_WORDS = frozenset({"because", "cause", "'cause", "cuz", "since", "which", "given"})
_REASON_PAIRS = {("so", "that"), ("in", "order"), ("so", "as")}
CONCLUSIONS = frozenset({"so", "therefore", "hence", "thus"})
_ARTICLES = frozenset({"the", "my", "your", "its", "our", "their", "this", "that", "a", "an"})
# Words that sequence orders. A comma before one ends a reason clause ("north, which is
# safe, then east": what follows is read, and rejects the reply). A comma between digits
# ("the camp is at (3,0)") ends nothing.
_SEQUENCE_WORDS = (
    r"(?:then|later|afterwards?|after\s+that|next\s+(?:turn|step|move|round)|followed\s+by)\b"
)
_SEQUENCING = re.compile(rf"\b{_SEQUENCE_WORDS}", re.IGNORECASE)
_SEQUENCING_COMMA = re.compile(rf",(?=[ \t]*(?:and[ \t]+)?{_SEQUENCE_WORDS})", re.IGNORECASE)
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=[ \t]?\d)")
#: where a reason clause after an order ends (with a comma too in listed grammars, and
#: at a comma before a word that sequences orders always)
REASON_STOPS = "\n.;!?)\x1f"
# Where a reason may go on to a further clause (matched on folded text).
_JOINT = re.compile(
    r"[,:&+/>]|\b(?:and|but|so|plus|also|too|yet|while|whereas|or|nor|then|later|next"
    r"|afterwards?|after\s+that|followed\s+by|as\s+well(?:\s+as)?|along\s+with"
    r"|together\s+with|in\s+addition(?:\s+to)?|additionally|moreover|furthermore|besides)\b"
)
# A command phrase followed by one of these and a word that is not filler is the subject
# of a description ("west are walls", "east has a bomb", "going east wastes a step").
PREDICATES = frozenset({
    "is", "are", "was", "were", "be", "been", "has", "have", "had", "does", "do", "did",
    "would", "will", "could", "can", "might", "may", "must", "should", "shall", "seems",
    "seem", "looks", "look", "appears", "remains", "lies", "sits", "leads", "lead", "gets",
    "takes", "costs", "wastes", "means", "gives", "brings", "hits", "ends", "reaches",
    "contains", "blocks", "borders", "touches", "faces", "opens", "offers", "keeps",
    "needs", "requires", "risks", "loses", "becomes", "shows", "reads", "points", "runs",
    "connects", "feels", "sounds", "goes",
})  # fmt: skip
# Words that judge a direction rather than describe it: "east is even better" is no
# description, whatever else the sentence says.
EVALUATIVE = frozenset({
    "correct", "right", "better", "best", "preferable", "preferred", "ideal", "optimal",
    "safer", "safest", "smarter", "wiser", "superior", "good", "great", "fine",
    "recommended", "advisable", "wise", "smart", "sensible", "logical", "obvious", "ok",
    "okay", "answer", "choice", "option", "way", "pick", "move", "plan", "target", "goal",
    "route", "path", "priority", "alternative", "instead", "destination", "objective",
    "aim", "intention", "decision", "selection", "preference", "call", "bet", "vote",
    "favourite", "favorite", "direction", "course", "what", "where", "tempting",
    "attractive", "appealing", "promising", "closer", "closest", "nearer", "nearest",
    "shorter", "shortest", "faster", "quicker", "easier", "one", "work", "works", "worth",
})  # fmt: skip
# ...and one after one of these, with a word that is not filler before it, the place a
# description names ("the exit is north", "the camp lies east").
_COPULAS = frozenset({"is", "are", "was", "were", "be", "been", "lies", "sits", "remains"})
# Words that open a reason after its first ("so that", "in order to", "as the").
_LEADS = frozenset({"that", "order", "to", "as", "so", "in"})
# A verb in the third person ("B holds", "C attacks"): a description, not an order.
_THIRD_PERSON = re.compile(r"[a-z]{3,}[^s\W]s")
# How far a description is looked for around a command phrase (keeps reading linear).
_REACH = 8


def is_subject(after: Sequence[str], fillers: frozenset[str]) -> bool:
    """Whether the words `after` a command phrase make it the subject of a description:
    a verb, then a word that is neither filler nor a judgement ("west are walls", "east
    has a bomb"; not "east is best", "east is even better")."""
    return (
        bool(after)
        and after[0] in PREDICATES
        and any(w not in fillers for w in after[1:])
        and not any(w in EVALUATIVE for w in after[1:])
    )


def is_complement(before: Sequence[str], fillers: frozenset[str]) -> bool:
    """Whether the words `before` a command phrase (nearest first) make it the place a
    description names: a copula, with a subject that is not all filler or judgement
    ("the exit is north"; not "the best move is north")."""
    return (
        bool(before)
        and before[0] in _COPULAS
        and any(w not in fillers for w in before[1:])
        and not any(w in EVALUATIVE for w in before[1:])
    )


def reason_ends(text: str, *, listed: bool = False) -> list[int]:
    """For each position of `text`, where a reason clause starting there ends."""
    text = _SEQUENCING_COMMA.sub("\n", _DIGIT_COMMA.sub(" ", text))
    return next_stop(text, REASON_STOPS + ("," if listed else ""))


def reason_is_last(text: str, start: int, *, listed: bool = False) -> bool:
    """Whether the reason clause starting at `start` is the end of `text`: nothing is
    written after its clause, and it has no word that could sequence a further order."""
    end = reason_ends(text, listed=listed)[start]
    return not WORD.search(text, end) and not _SEQUENCING.search(text, start, end)


def next_stop(folded: str, stops: str) -> list[int]:
    """For each position, where the clause it is in ends (at one of `stops`)."""
    out = [len(folded)] * (len(folded) + 1)
    for index in range(len(folded) - 1, -1, -1):
        out[index] = index if folded[index] in stops else out[index + 1]
    return out


def starts_reason(
    word: str,
    following: re.Match[str] | None,
    covered: list[bool],
    ordered_before: bool,
    clause_end: int,
) -> bool:
    """Whether `word` (followed by the word `following`) starts a reason clause."""
    nxt = following.group(0) if following else ""
    if word in REASON_WORDS or (word, nxt) in _REASON_PAIRS:
        return True
    if word == "as" and nxt in ("it", "the", "this", "that", "there", "i", "we", "my"):
        return True
    if word in CONCLUSIONS and ordered_before:
        # "north so I reach the gold" gives a purpose; "north, so east" two orders
        return not any(covered[following.start() if following else 0 : clause_end])
    # "north to reach the gold": `to` + a word that belongs to no command phrase
    return (
        word == "to"
        and following is not None
        and nxt not in _ARTICLES
        and not covered[following.start()]
    )


class ReasonReader:
    """Where each reason clause of one text really ends (module docstring). Built once
    per text: the joints, words and scheduling words are found in one pass each, and
    each reason looks up only its own stretch of them."""

    def __init__(self, folded: str, spans: list[tuple[int, int]], fillers: frozenset[str]):
        change = [0] * (len(folded) + 1)
        for start, end in spans:
            change[start] += 1
            change[end] -= 1
        covered = [depth > 0 for depth in itertools.accumulate(change)]
        self._folded, self._covered = folded, covered
        self._fillers = fillers
        self._saying_nothing = (fillers | _LEADS) - PREDICATES
        self._spans = sorted(spans)
        self._span_starts = [start for start, _ in self._spans]
        self._joints = [m.span() for m in _JOINT.finditer(folded) if not covered[m.start()]]
        self._joint_ends = [end for _, end in self._joints]
        self._words = list(WORD.finditer(folded))
        self._word_starts = [m.start() for m in self._words]
        self._scheduling = [
            m for m in self._words if m.group(0) in TEMPORAL and not covered[m.start()]
        ]
        self._scheduling_at = [m.start() for m in self._scheduling]

    def end(self, start: int, stop: int) -> tuple[int, str]:
        """For a reason from `start` to its clause end `stop`: where it really ends, and
        the scheduling word that makes it order something for later ("" if none)."""
        first = bisect.bisect_left(self._span_starts, start)
        last = bisect.bisect_left(self._span_starts, stop)
        if first == last:
            return stop, ""  # no command phrase in the reason: all of it is the reason
        if self._only_orders(start, stop):
            return self._spans[first][0], ""  # "north because east": it explains nothing
        when = bisect.bisect_left(self._scheduling_at, start)
        if when < len(self._scheduling_at) and self._scheduling_at[when] < stop:
            joint = self._joint_before(start, self._spans[first][0])
            return (joint[0] if joint else stop), self._scheduling[when].group(0)
        for span in self._spans[first:last]:
            joint = self._joint_before(start, span[0])
            if joint is None:
                continue  # in the reason's own stretch: what it explains, not an order
            following = bisect.bisect_left(self._joints, (span[1], 0))
            stretch_end = self._joints[following][0] if following < len(self._joints) else stop
            if not self._describes(span, joint[1], min(stretch_end, stop)):
                return joint[0], ""
        return stop, ""

    def _only_orders(self, start: int, stop: int) -> bool:
        """Whether the reason from `start` to `stop` says nothing but command phrases and
        filler ("because east", "since A south"): then they are orders, not what it
        explains. A verb ("because B is east", "because B holds") or a masked clause in
        it or right after it ("because east isn't safe") says more: it stays a reason."""
        if MASK in self._folded[start : stop + 1]:
            return False
        at = bisect.bisect_left(self._word_starts, start)
        for match in self._words[at + 1 : bisect.bisect_left(self._word_starts, stop)]:
            word = match.group(0)
            if word in PREDICATES or _THIRD_PERSON.fullmatch(word):
                return False
            if not self._covered[match.start()] and word not in self._saying_nothing:
                return False
        return True

    def _joint_before(self, start: int, at: int) -> tuple[int, int] | None:
        """The last joint between `start` and `at` (inside the reason), if any."""
        index = bisect.bisect_right(self._joint_ends, at) - 1
        if index >= 0 and self._joints[index][0] > start:
            return self._joints[index]
        return None

    def _describes(self, span: tuple[int, int], lo: int, hi: int) -> bool:
        """Whether the command phrase at `span`, in the stretch [lo, hi), is the subject
        of a description or the place one names, rather than an order."""
        after_at = bisect.bisect_left(self._word_starts, span[1])
        after = [m.group(0) for m in self._words[after_at : after_at + _REACH] if m.start() < hi]
        if after and after[0] in PREDICATES:
            return is_subject(after, self._fillers)
        before_at = bisect.bisect_left(self._word_starts, span[0])
        before = [
            m.group(0)
            for m in reversed(self._words[max(0, before_at - _REACH) : before_at])
            if m.start() >= lo
        ]
        return is_complement(before, self._fillers)
