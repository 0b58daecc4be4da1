"""Scripted (heuristic) agents, one per scenario.

Each policy reads only `info["observation"]` (what the agent is shown), never hidden
state; together they prove every scenario is solvable from its observation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from textenvs.core.declaration import load_entry_point
from textenvs.core.registry import UnknownEnvError, get
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext


class ScriptedPolicy(ABC):
    """A per-scenario heuristic. A fresh instance plays each episode."""

    def __init__(self, context: EpisodeContext) -> None:
        self.context = context

    @abstractmethod
    def choose(self, observation: dict[str, Any]) -> str:
        """The command for this turn, from the observation model alone."""


def load_policy(env_name: str) -> type[ScriptedPolicy]:
    """The scenario's scripted policy, as its declaration names it (`scripted_entry_point`)."""
    try:
        scenario = get(env_name)
    except UnknownEnvError:
        raise ValueError(f"no scripted agent for '{env_name}'") from None
    return load_entry_point(scenario.scripted_entry_point)


def load_reference(env_name: str) -> Callable[..., dict[str, Any]] | None:
    """The scenario's reference runs beyond random and scripted, which the bands publish
    (its declared `reference_entry_point`); None for a scenario without any."""
    entry_point = get(env_name).reference_entry_point
    return load_entry_point(entry_point) if entry_point else None


class ScriptedAgent(Agent):
    """Dispatches to the scenario's policy; sees only `info["observation"]`."""

    name = "scripted"

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        self._policy = load_policy(context.env_name)(context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        return Decision(self._policy.choose(info["observation"]))
