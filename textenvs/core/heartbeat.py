"""A line at least every minute from long work whose output goes to a log.

rich's progress bar redraws itself on a terminal; written to a file or a pipe it shows
nothing until it stops, so a log of an hour-long evaluation or training step would stay
silent. `Heartbeat` prints what the work says of itself whenever `every` seconds pass
without a line, on a console that is not a terminal (on a terminal the bar says it).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

from rich.console import Console

#: seconds between lines when nothing else was printed
EVERY_S = 60.0


class Heartbeat:
    """Prints `describe()` on `console` once `every` seconds pass without a line (not on a
    terminal); `said()` marks a line printed by the work itself."""

    def __init__(
        self, console: Console, describe: Callable[[], str], every: float = EVERY_S
    ) -> None:
        self.console, self.describe, self.every = console, describe, every
        self.last = time.monotonic()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def said(self) -> None:
        self.last = time.monotonic()

    def _beat(self) -> None:
        while not self.stopped.wait(max(0.0, self.last + self.every - time.monotonic())):
            if time.monotonic() - self.last >= self.every:
                self.console.print(self.describe(), markup=False, highlight=False)
                self.said()

    def __enter__(self) -> Heartbeat:
        if not self.console.is_terminal:
            self.thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
            self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()
