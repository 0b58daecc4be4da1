"""Agent errors in a run: their classes, and when to stop a run that cannot succeed.

An error's class is its message without the details that vary between episodes:
`HTTP 401: Incorrect API key ...` -> `HTTP 401`, `connection error (ConnectError: ...)
(after 5 attempts)` -> `connection error`, `episode crashed: ConnectError: ...` ->
`episode crashed: ConnectError`.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from textenvs.episodes.protocol import AGENT_ERROR
from textenvs.evals.metrics import Record

CRASHED = "episode crashed: "  # the runner's prefix for a crash outside the agent's turn
RATE_WINDOW = 20  # the error share is judged over this many latest episodes
_CUT = re.compile(r":\s|\s\(")


def error_class(message: str | None) -> str:
    """The stable head of an error message (see the module docstring)."""
    text = (message or "unknown error").strip()
    prefix = ""
    if text.startswith(CRASHED):
        prefix, text = CRASHED, text[len(CRASHED) :]
    head = _CUT.split(text, maxsplit=1)[0].strip()
    return prefix + (head or "unknown error")


def top_error_classes(records: Iterable[Record], limit: int = 5) -> list[tuple[str, int]]:
    """The most frequent agent-error classes with their counts."""
    counts = Counter(error_class(r.get("error")) for r in records if r["outcome"] == AGENT_ERROR)
    return counts.most_common(limit)


@dataclass
class FailFast:
    """Stops a run early. `first`: when the first `first` episodes of this process all end
    in agent errors of one class (0: never). `max_error_rate`: when more than that share
    of the last `RATE_WINDOW` episodes are agent errors (1: never)."""

    first: int = 5
    max_error_rate: float = 0.5
    _seen: int = 0
    _first_classes: Counter[str] = field(default_factory=Counter)
    _window: deque[bool] = field(default_factory=lambda: deque(maxlen=RATE_WINDOW))

    def observe(self, record: Record) -> str | None:
        """Count one finished episode; the reason to stop, or None to go on."""
        failed = record["outcome"] == AGENT_ERROR
        self._seen += 1
        self._window.append(failed)
        if self._seen <= self.first:
            self._first_classes[error_class(record.get("error")) if failed else ""] += 1
            if self._seen == self.first and len(self._first_classes) == 1 and failed:
                return (
                    f"the first {self.first} episodes all ended in the same agent error "
                    f"({error_class(record.get('error'))})"
                )
        errors = sum(self._window)
        if len(self._window) == RATE_WINDOW and errors > self.max_error_rate * RATE_WINDOW:
            return (
                f"{errors} of the last {RATE_WINDOW} episodes ended in agent errors "
                f"(more than --max-error-rate {self.max_error_rate:g})"
            )
        return None
