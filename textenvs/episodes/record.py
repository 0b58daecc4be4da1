"""An episode as it is recorded: every outcome, each turn, the totals, and the one
bookkeeping that keeps them (used by `loop.run_episode` and by training's rollouts,
which play their episodes in lockstep)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from textenvs.episodes.protocol import Decision

# How an episode ended.
SUCCESS = "success"
FAILURE = "failure"  # terminated without success
TIMEOUT = "timeout"  # the step budget ran out
INVALID_LIMIT = "invalid_limit"  # `max_invalid` invalid commands in a row
TURN_LIMIT = "turn_limit"  # a trainer stopped the episode at its turn limit (`max_turns`)
# ... and the agent's own (`Decision.outcome`): AGENT_ERROR, CONTEXT_OVERFLOW (protocol.py)

#: an env step's result: (observation, reward, terminated, truncated, info)
Stepped = tuple[str, float, bool, bool, dict[str, Any]]


@dataclass
class Turn:
    step: int
    observation: str  # what the agent was shown before it acted
    command: str
    reward: float
    invalid_action: bool
    error: str | None
    events: list[dict[str, Any]]
    raw: str | None = None
    #: the canonical command the env executed (None when the reply was rejected: `error`)
    read_as: str | None = None
    reasks: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    record: dict[str, Any] = field(default_factory=dict)


@dataclass
class EpisodeResult:
    env: str
    seed: int | None
    agent: str
    success: bool = False
    total_reward: float = 0.0
    steps: int = 0
    invalid_actions: int = 0
    reasks: int = 0
    outcome: str = TIMEOUT
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    wall_s: float = 0.0
    final_observation: str = ""
    #: the scenario's difficulty level (None for a scenario without levels)
    level: int | None = None
    #: `info["observation"]` of the last observation (the data form of the text above)
    final_info_observation: dict[str, Any] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Everything but the turns: one line of a results file."""
        data = asdict(self)
        del data["turns"], data["final_observation"], data["final_info_observation"]
        return data

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def scores(self) -> dict[str, float]:
        """The per-episode numbers the adapters report (Inspect scores, verifiers metrics)."""
        return {
            "success": float(self.success),
            "return": float(self.total_reward),
            "steps": float(self.steps),
            "invalid_actions": float(self.invalid_actions),
        }

    # ----- the bookkeeping, one call per event ------------------------------------------

    def decided(self, decision: Decision) -> bool:
        """Count what the agent's decision cost; True when it ends the episode (the agent
        cannot go on: its outcome and error are the episode's)."""
        self.reasks += decision.reasks
        self.latency_s += decision.latency_s
        for key, value in decision.usage.items():
            self.usage[key] = self.usage.get(key, 0) + int(value)
        if decision.outcome is None:
            return False
        self.outcome, self.error = decision.outcome, decision.error
        return True

    def stepped(self, shown: str, decision: Decision, step: Stepped) -> bool:
        """Record the turn in which `decision` was stepped on observation `shown`; True
        when the env ended the episode (its outcome set)."""
        _, reward, terminated, truncated, info = step
        self.turns.append(
            Turn(
                step=info["steps_used"],
                observation=shown,
                command=decision.command,
                reward=reward,
                invalid_action=info["invalid_action"],
                error=info["error"],
                events=info["events"],
                raw=decision.raw if decision.raw is not None else decision.command,
                read_as=info.get("read_as"),
                reasks=decision.reasks,
                usage=dict(decision.usage),
                latency_s=decision.latency_s,
                record=decision.record,
            )
        )
        self.total_reward += reward
        self.steps = info["steps_used"]
        self.invalid_actions += int(info["invalid_action"])
        if not (terminated or truncated):
            return False
        self.success = bool(info["success"])
        self.outcome = SUCCESS if self.success else (FAILURE if terminated else TIMEOUT)
        return True

    def ended(self, observation: str, info: dict[str, Any]) -> None:
        """Keep the final observation (text and data)."""
        self.final_observation = observation
        self.final_info_observation = info.get("observation") or {}
