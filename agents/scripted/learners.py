"""The `learner` agent: scripted players that start ignorant and learn across episodes.

Made for trial mode (`--trials K`) on the withheld-knowledge variants: one agent plays a
group's K episodes in order, and what it knows comes only from what the episodes show
(the observations and, through `end_episode`, each final observation). A new group
(trial 1) starts ignorant again. With `--trials 1` it plays every episode ignorant: the
memoryless contrast.

- Magnetic Field: keeps every window pattern -> bits pair that an episode's end shows
  (the field and the true bits of its 18 windows) and decodes with those and the
  observation's hints, by the scripted solver's hypothesis space (without the check
  bits, whose form the withheld variant does not tell); when the examples still leave
  several messages open it types one of them.
- EM Anomaly: keeps, for each field reading 0-3, the node distances that episodes'
  ends revealed for a tile with that reading. It marks where the readings seen so far
  put the node within 1 tile, walks towards readings known to lie nearer the node,
  explores the unseen floor otherwise, and when it stands on a reading it has never
  ended on, it marks there to find out what the reading means.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from textenvs.agents.plays import not_played
from textenvs.agents.scripted.em_anomaly import EMAnomalyPolicy
from textenvs.agents.scripted.magnetic_field import messages, next_command, window_keys
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext, EpisodeEnd

Cell = tuple[int, int]


class Learner(ABC):
    """What a learner knows outlives the episode; `start` begins the next one."""

    @abstractmethod
    def start(self, context: EpisodeContext) -> None:
        """A new episode (trial) begins."""

    @abstractmethod
    def choose(self, observation: dict[str, Any]) -> str:
        """The command for this turn, from the observation model alone."""

    @abstractmethod
    def learn(self, final: dict[str, Any], end: EpisodeEnd) -> None:
        """The episode is over: `final` is its last observation (data form)."""


class MagneticFieldLearner(Learner):
    def __init__(self) -> None:
        #: pattern 'ab/cd' -> bits, from the ends of earlier episodes
        self.examples: dict[str, str] = {}
        self.target: str | None = None
        self.rng = np.random.default_rng(0)

    def start(self, context: EpisodeContext) -> None:
        self.target = None
        self.rng = np.random.default_rng([context.seed or 0, 7])

    def choose(self, observation: dict[str, Any]) -> str:
        if self.target is None:
            hints = {**self.examples, **{h["pattern"]: h["bits"] for h in observation["hints"]}}
            found = sorted(messages(observation, hints, check=False))
            if found:
                self.target = found[int(self.rng.integers(len(found)))]
            else:  # cannot happen for the true rule; a guess keeps the agent total
                self.target = "".join(f"{d:X}" for d in self.rng.integers(16, size=4))
        return next_command(observation, self.target)

    def learn(self, final: dict[str, Any], end: EpisodeEnd) -> None:
        bits = final.get("window_bits")
        if bits:
            self.examples.update(zip(window_keys(final["grid"]), bits, strict=True))


class EMAnomalyLearner(Learner):
    """Reuses the scripted policy's dead reckoning and map (`EMAnomalyPolicy.track`,
    `paths`), none of its knowledge of the field."""

    def __init__(self) -> None:
        #: field reading -> node distances revealed at the end of an episode on it
        self.distances: dict[int, list[int]] = {}
        self.map: EMAnomalyPolicy | None = None

    def start(self, context: EpisodeContext) -> None:
        self.map = EMAnomalyPolicy(context)

    def nearness(self, reading: int) -> float | None:
        """The mean revealed node distance for a reading, None before any."""
        seen = self.distances.get(reading)
        return sum(seen) / len(seen) if seen else None

    def choose(self, observation: dict[str, Any]) -> str:
        assert self.map is not None
        state = self.map
        state.track(observation)
        here = observation["view"][1][1]
        near = self.nearness(here)
        if near is None or max(self.distances[here]) <= 1 or observation["steps_left"] <= 1:
            return "mark"  # a sure win, the last step, or a reading to find out about
        reach = state.paths(optimistic=True)
        # readings never ended on are the most interesting; then those nearer than here
        known = [
            (rank, reach[cell][0], cell)
            for cell, value in state.known.items()
            if isinstance(value, int) and cell in reach and cell != state.pos
            for rank in [self.nearness(value)]
            if rank is None or rank < near
        ]
        if known:
            known.sort(key=lambda item: (item[0] is not None, item[0] or 0, item[1], item[2]))
            return state.step_towards(known[0][2], reach)
        goal = self._frontier(reach, observation["steps_left"])
        return "mark" if goal is None else state.step_towards(goal, reach)

    def _frontier(self, reach: dict[Cell, tuple[int, str]], steps_left: int) -> Cell | None:
        """The reachable tile whose 3x3 scan would show the most unseen tiles per step."""
        assert self.map is not None
        known = self.map.known
        lo_x, hi_x, lo_y, hi_y = self.map.bounds()
        best: tuple[float, Cell] | None = None
        for (x, y), (dist, _move) in reach.items():
            if dist == 0 or dist >= steps_left:
                continue
            unseen = sum(
                1
                for dx in (-1, 0, 1)
                for dy in (-1, 0, 1)
                if (x + dx, y + dy) not in known
                and lo_x <= x + dx <= hi_x
                and lo_y <= y + dy <= hi_y
            )
            score = unseen / (dist + 2)
            if unseen and (best is None or (score, (x, y)) > best):
                best = (score, (x, y))
        return None if best is None else best[1]

    def learn(self, final: dict[str, Any], end: EpisodeEnd) -> None:
        distance = final.get("node_distance")
        here = final["view"][1][1]
        if distance is not None and isinstance(here, int):
            self.distances.setdefault(here, []).append(int(distance))


LEARNERS: dict[str, type[Learner]] = {
    "magnetic-field": MagneticFieldLearner,
    "em-anomaly": EMAnomalyLearner,
}


class LearnerAgent(Agent):
    """Dispatches to the scenario's learner; sees only `info["observation"]`."""

    name = "learner"

    def __init__(self) -> None:
        self._learner: Learner | None = None

    def reset(self, context: EpisodeContext) -> None:
        if problem := not_played(self.name, LEARNERS, context.env_name):
            raise ValueError(problem)
        super().reset(context)
        if self._learner is None or context.trial == 1:  # a new group starts ignorant
            self._learner = LEARNERS[context.env_name]()
        self._learner.start(context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        assert self._learner is not None
        return Decision(self._learner.choose(info["observation"]))

    def end_episode(self, observation: str, info: dict[str, Any], end: EpisodeEnd) -> None:
        if self._learner is not None:
            self._learner.learn(info["observation"], end)
