"""The `random` baseline: a uniformly random well-formed command every turn."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.episodes.protocol import Agent, Decision, EpisodeContext


class RandomAgent(Agent):
    """Seeded from the episode seed, so a seed always gives the same random episode; a
    seed's later episodes (`eval --episodes-per-seed K`) each from a seed of their own."""

    name = "random"

    def __init__(self, seed_offset: int = 0) -> None:
        self.seed_offset = seed_offset
        self._rng = np.random.default_rng(seed_offset)

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        key = [context.seed or 0, self.seed_offset]
        # a first episode keeps the key it always had, so single-episode runs are unchanged
        self._rng = np.random.default_rng([*key, context.repeat] if context.repeat else key)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        return Decision(self.context.random_command(info, self._rng))

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "seed_offset": self.seed_offset}
