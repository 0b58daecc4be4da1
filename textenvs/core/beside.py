"""What a reply says beside its orders that stops them being executed as written.

- An order held on a condition ("C attack if possible", "if the path is open, B east",
  "north; otherwise east"): the environment checks no conditions, and running the other
  orders alone would leave that unit to hold, or run them as if it had not been written.
- A condition after an order, anywhere after it in the reply: in its clause, after a
  dash or a colon, in a later sentence, or on a line below the `Action:` line ("north -
  if possible", "north. Unless it is a wall.", "Action: north" then "(if possible)").
- A question about a command after an order ("Action: north. Or east?").

`is_reason_line` tells whether a labelled reason below the `Action:` line ("Reason: ...")
is read as a reason, and so left unread.

`Beside` gathers them while `core.parsing.read` goes through the command parts, and
`check` raises the first it found. `hides_order` tells whether a reason hides an order
(`core.reasons`: "Action: A, because bit 3 is set, and enter B"), so that the reply is
read in full rather than as the command before the reason.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from textenvs.core.answer_format import fold
from textenvs.core.clauses import (
    conditioned_stretches,
    mask_unread,
    qualifying_conditions,
    questions,
)
from textenvs.core.consumption import Found, split_places
from textenvs.core.parse_error import ParseError, excerpt
from textenvs.core.reasons import ReasonReader
from textenvs.core.remarks import WITHDRAWING
from textenvs.core.words import WORD

A = TypeVar("A", bound=Hashable)


class Beside(Generic[A]):
    """Conditions, questions and held orders beside the orders of one reply."""

    def __init__(self, scan: Callable[[str], list[Found[A]]]):
        self._scan = scan
        self.held = self.condition = self.doubt = ""
        self._part = ("", "")
        self._conditions: list[re.Match[str]] = []

    def look(self, segment: str, folded: str, *, ordered: bool) -> None:
        """Note what a command part (`folded`: its folded text) says beside orders;
        `ordered`: orders came before it, so all of it follows them."""
        if not self.held:
            held = _order_in(conditioned_stretches(folded), segment, folded, self._scan)
            self.held = segment[held.start : held.end] if held else ""
        self._part = (segment, folded)
        self._conditions = qualifying_conditions(folded)
        if ordered:
            self.orders_from(-1)

    def orders_from(self, position: int) -> None:
        """The part noted last gives orders from `position` on: what comes after counts."""
        segment, folded = self._part
        if not self.doubt and "?" in folded[position + 1 :]:
            # looked for only here: a question with no order before it is no doubt
            asked = _order_in(questions(folded), segment, folded, self._scan)
            if asked and asked.start > position:
                self.doubt = segment[asked.start : asked.end]
        after = [m.group(0) for m in self._conditions if m.start() > position]
        self.condition = self.condition or next(iter(after), "")

    def below(self, lines: Sequence[str]) -> None:
        """Lines right below the Action: lines follow its orders."""
        for line in lines:
            self.look(line, fold(line), ordered=True)

    def check(self, valid: Sequence[str]) -> None:
        """Raise for the first thing found that stops the orders being executed."""
        if self.held:
            raise ParseError(
                f"'{excerpt(self.held)}' is an order on a condition, and the environment "
                "checks no conditions: give every order outright in one command.",
                valid,
            )
        if self.doubt:
            raise ParseError(
                f"a question about '{excerpt(self.doubt)}' follows the order, which leaves "
                "the choice open: decide, and send exactly one command.",
                valid,
            )
        if self.condition:
            raise ParseError(
                f"the order is followed by a condition ('{self.condition} ...'), and the "
                "environment checks no conditions: send the command outright, on a final "
                "line 'Action: <command>'.",
                valid,
            )


def hides_order(
    visible: str, start: int, scan: Callable[[str], list[Found[A]]], fillers: frozenset[str]
) -> bool:
    """Whether the reason from `start` to the end of `visible` hides an order: one after
    a joint ("A, because bit 3 is set, and enter B") or one it schedules ("because: then
    right"); see `core.reasons`."""
    folded = fold(visible)
    orders, _ = split_places(folded, scan(visible))
    spans = [(item.start, item.end) for item in orders if item.start >= start]
    if not spans:
        return False
    end, scheduling = ReasonReader(folded, spans, fillers).end(start, len(folded))
    return bool(scheduling) or end < len(folded)


# A line labelled as a reason ("Reason: the west is the edge", "**Why:** ...").
_REASON_LABEL = re.compile(
    r"[ \t>*_#`-]*(?P<label>reason(?:ing)?|why|because|rationale|justification)\b"
    r"[*_` \t]*[:=-]",
    re.IGNORECASE,
)


def is_reason_line(
    line: str, scan: Callable[[str], list[Found[A]]], fillers: frozenset[str]
) -> bool:
    """Whether a line below the Action: line is a labelled reason that is not read: one
    that takes nothing back (no word of `core.remarks.WITHDRAWING`) and, read as a reason
    from its label on, hides no order ("Reason: I need materials before digging" is one;
    "Reason: east is better", "Reason: it is safe, and east" are not)."""
    label = _REASON_LABEL.match(line)
    if label is None:
        return False
    visible = mask_unread(line, fold(line))
    if any(word in WITHDRAWING for word in WORD.findall(fold(visible))):
        return False
    return not hides_order(visible, label.start("label"), scan, fillers)


def _order_in(
    stretches: list[tuple[int, int]],
    segment: str,
    folded: str,
    scan: Callable[[str], list[Found[A]]],
) -> Found[A] | None:
    """The first command phrase of `segment` (as an order, not a place) inside one of
    `stretches` (sorted, not overlapping), if any."""
    if not stretches:
        return None
    ends = [end for _, end in stretches]
    for item in split_places(folded, scan(segment))[0]:
        if item.action is None:
            continue
        index = bisect.bisect_right(ends, item.start)  # the first stretch ending after it
        if index < len(stretches) and stretches[index][0] <= item.start:
            return item
    return None
