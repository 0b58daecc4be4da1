"""Magnetic Field lookup-only baseline: exact matching against the hints, no induction.

It reads the windows as the rules text says, looks each message window (or, failing that,
its check copy) up in the hints exactly as shown, and guesses the 2 bits of any window
that neither matches. It never generalises from the examples, so its score per level
measures how far plain lookup gets: every window matches at level 0, few at level 3.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.agents.scripted.magnetic_field import (
    MESSAGE_WINDOWS,
    SLOTS,
    next_command,
    window_keys,
)
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext


def lookup_message(observation: dict[str, Any], rng: np.random.Generator) -> str:
    """The message read by exact lookup, with random bits where no window matches."""
    hints = {h["pattern"]: int(h["bits"], 2) for h in observation["hints"]}
    keys = window_keys(observation["grid"])
    values = []
    for k in range(MESSAGE_WINDOWS):
        known = [hints[key] for key in (keys[k], keys[k + MESSAGE_WINDOWS]) if key in hints]
        values.append(known[0] if known else int(rng.integers(4)))
    return "".join(f"{4 * values[2 * i] + values[2 * i + 1]:X}" for i in range(SLOTS))


class MagneticFieldLookupAgent(Agent):
    """Seeded from the episode seed, so a seed always gives the same guesses."""

    name = "lookup"

    def reset(self, context: EpisodeContext) -> None:
        if context.env_name != "magnetic-field":
            raise ValueError(f"the lookup agent plays only magnetic-field, not {context.env_name}")
        super().reset(context)
        self._rng = np.random.default_rng([context.seed or 0, 15])
        self._target: str | None = None

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        if self._target is None:
            self._target = lookup_message(info["observation"], self._rng)
        return Decision(next_command(info["observation"], self._target))
