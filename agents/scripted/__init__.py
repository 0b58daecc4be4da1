"""Scripted (heuristic) agents, one per scenario.

Each policy reads only `info["observation"]` (what the agent is shown), never hidden
state; together they prove every scenario is solvable from its observation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from textenvs.core.registry import load_entry_point
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext

# CLI env name -> "module:Class" of its policy.
POLICIES: dict[str, str] = {
    "treasure-hunt": "textenvs.agents.scripted.treasure_hunt:TreasureHuntPolicy",
    "magnetic-field": "textenvs.agents.scripted.magnetic_field:MagneticFieldPolicy",
    "em-anomaly": "textenvs.agents.scripted.em_anomaly:EMAnomalyPolicy",
    "squad-recon": "textenvs.agents.scripted.squad_recon:SquadReconPolicy",
    "megacity": "textenvs.agents.scripted.megacity:MegacityPolicy",
}

# CLI env name -> "module:function" of its reference runs beyond random and scripted, which
# the bands publish: `measure(level, seeds, planner_wins, play_episode, workers, note)`.
REFERENCES: dict[str, str] = {
    "megacity": "textenvs.agents.scripted.megacity_reference:measure",
}


class ScriptedPolicy(ABC):
    """A per-scenario heuristic. A fresh instance plays each episode."""

    def __init__(self, context: EpisodeContext) -> None:
        self.context = context

    @abstractmethod
    def choose(self, observation: dict[str, Any]) -> str:
        """The command for this turn, from the observation model alone."""


def load_policy(env_name: str) -> type[ScriptedPolicy]:
    if env_name not in POLICIES:
        raise ValueError(f"no scripted agent for '{env_name}'")
    return load_entry_point(POLICIES[env_name])


def load_reference(env_name: str) -> Callable[..., dict[str, Any]] | None:
    """The scenario's reference runs (`REFERENCES`); None for a scenario without any."""
    return load_entry_point(REFERENCES[env_name]) if env_name in REFERENCES else None


class ScriptedAgent(Agent):
    """Dispatches to the scenario's policy; sees only `info["observation"]`."""

    name = "scripted"

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        self._policy = load_policy(context.env_name)(context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        return Decision(self._policy.choose(info["observation"]))
