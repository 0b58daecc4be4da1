"""The agent protocol: given an observation (and info), return a command.

`act` is a coroutine so one event loop can drive many episodes whose agents wait on the
network; agents that only compute simply never await.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel


@dataclass(frozen=True)
class EpisodeContext:
    """What an agent is told when an episode starts."""

    env_name: str
    seed: int | None
    rules: str
    max_steps: int
    #: the env's parser: raises `textenvs.core.ParseError` on text it cannot read
    parse: Callable[[str], Any]
    #: the env's structured action model (function calling)
    action_schema: type[BaseModel]
    #: structured action -> command text
    command_for: Callable[[dict[str, Any]], str]
    #: a uniformly random well-formed command for the current turn
    random_command: Callable[[dict[str, Any], np.random.Generator], str]
    #: the rules prompt (`textenvs.prompts`) for this episode's variant; "" = `env_name`
    prompt: str = ""
    #: trial mode (`--trials K`): this episode is trial `trial` of `trials` played by
    #: the same agent in one continuing conversation (1 of 1 otherwise)
    trial: int = 1
    trials: int = 1
    #: which of a seed's episodes this is (`--episodes-per-seed K`: 0 to K-1), so an
    #: agent that samples can draw each of them differently
    repeat: int = 0


# Outcomes an agent may end an episode with (`Decision.outcome`); the others are in
# `textenvs.episodes.record`.
AGENT_ERROR = "agent_error"
CONTEXT_OVERFLOW = "context_overflow"  # the prompt no longer fits the model's context
UNFINISHED = "unfinished"  # the agent stopped before the episode ended (Inspect's tools)


@dataclass(frozen=True)
class EpisodeEnd:
    """How an episode ended, told to the agent with its final observation."""

    outcome: str
    success: bool
    total_reward: float
    steps: int


@dataclass
class Decision:
    """An agent's answer for one turn, with what it cost.

    `outcome` set (e.g. AGENT_ERROR, CONTEXT_OVERFLOW) means the agent cannot go on:
    the runner ends the episode with that outcome instead of stepping.
    """

    command: str
    raw: str | None = None
    reasks: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    outcome: str | None = None
    error: str | None = None
    record: dict[str, Any] = field(default_factory=dict)


class Agent(ABC):
    """Base of every agent. Subclasses set `name` and implement `act`."""

    name: str = "agent"

    def reset(self, context: EpisodeContext) -> None:
        """Called before each episode."""
        self.context = context

    @abstractmethod
    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        """The command for this turn."""

    def end_episode(  # noqa: B027 (optional hook, a no-op by default)
        self, observation: str, info: dict[str, Any], end: EpisodeEnd
    ) -> None:
        """Called once an episode is over, with its final observation (no-op by default).
        In trial mode the same agent then plays the next trial: an agent that learns
        across episodes learns here."""

    def config(self) -> dict[str, Any]:
        """JSON-able settings that identify this agent in results (no secrets)."""
        return {"name": self.name}

    async def aclose(self) -> None:  # noqa: B027 (optional hook, a no-op by default)
        """Release network clients or servers."""
