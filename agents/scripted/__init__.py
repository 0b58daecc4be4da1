"""Scripted (heuristic) agents, one per scenario.

Each policy reads only `info["observation"]` (what the agent is shown), never hidden
state; together they prove every scenario is solvable from its observation.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from typing import Any

from textenvs.episodes.protocol import Agent, Decision, EpisodeContext

# CLI env name -> "module:Class" of its policy.
POLICIES: dict[str, str] = {
    "treasure-hunt": "textenvs.agents.scripted.treasure_hunt:TreasureHuntPolicy",
    "magnetic-field": "textenvs.agents.scripted.magnetic_field:MagneticFieldPolicy",
    "em-anomaly": "textenvs.agents.scripted.em_anomaly:EMAnomalyPolicy",
    "squad-recon": "textenvs.agents.scripted.squad_recon:SquadReconPolicy",
    "megacity": "textenvs.agents.scripted.megacity:MegacityPolicy",
}


class ScriptedPolicy(ABC):
    """A per-scenario heuristic. A fresh instance plays each episode."""

    def __init__(self, context: EpisodeContext) -> None:
        self.context = context

    @abstractmethod
    def choose(self, observation: dict[str, Any]) -> str:
        """The command for this turn, from the observation model alone."""


def load_policy(env_name: str) -> type[ScriptedPolicy]:
    try:
        module, _, attr = POLICIES[env_name].partition(":")
    except KeyError:
        raise ValueError(f"no scripted agent for '{env_name}'") from None
    return getattr(importlib.import_module(module), attr)


class ScriptedAgent(Agent):
    """Dispatches to the scenario's policy; sees only `info["observation"]`."""

    name = "scripted"

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        self._policy = load_policy(context.env_name)(context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        return Decision(self._policy.choose(info["observation"]))
