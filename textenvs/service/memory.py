"""Garbage-collector pauses with many sessions open (`textenvs serve` turns this on).

A full collection walks every tracked object: with 10,000 sessions (about 20 objects
each, plus the imported modules) that is a pause of 60-300 ms on an idle core, which
lands on whichever request is running. Sessions live long and hold no reference cycles
(a dropped session is freed by reference counting), so the collector has nothing to find
in them: `freeze` moves everything alive to the permanent generation, which collections
skip. It runs once at startup (modules, the app) and after every `every` sessions
created, after a collection of the young generations so that fresh cyclic garbage is
freed first rather than frozen.
"""

from __future__ import annotations

import gc


class SessionFreezer:
    def __init__(self, every: int = 1000) -> None:
        self.every = every
        self._created = 0

    def start(self) -> None:
        gc.collect()
        gc.freeze()

    def created(self) -> None:
        self._created += 1
        if self._created % self.every == 0:
            gc.collect(1)
            gc.freeze()

    def stop(self) -> None:
        gc.unfreeze()
