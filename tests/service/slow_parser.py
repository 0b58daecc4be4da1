"""A scenario whose parser is pathologically slow on commands that start with "slow": a
regular expression that backtracks exponentially and holds the GIL while it does (what a
quadratic pattern over a long command does too). The service tests swap it in for a
session's env to show a slow parser cannot stall the event loop."""

from __future__ import annotations

import re
import time
from typing import Any

from textenvs.scenarios.treasure_hunt.env import TreasureHuntEnv

# (a+)+$ against "a...a!" tries every way to split the run: 2**n steps.
BACKTRACKS = re.compile(r"(a+)+$")
SLOW_FOR_S = 3.0


class SlowParserEnv(TreasureHuntEnv):
    def parse(self, text: str) -> Any:
        if text.startswith("slow"):
            deadline = time.monotonic() + SLOW_FOR_S
            while time.monotonic() < deadline:
                BACKTRACKS.match("a" * 20 + "!")
        return super().parse(text)
