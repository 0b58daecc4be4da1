"""What an eval plays: its scenarios, seeds and episodes (`EvalPlan`), read from the
command line's `--env` and `--seeds`, and the run's `config.json`."""

from __future__ import annotations

import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import textenvs
from textenvs.core.registry import episode_level
from textenvs.episodes.protocol import Agent
from textenvs.evals import trials
from textenvs.evals.metrics import Key


@dataclass
class EvalPlan:
    envs: list[str]
    seeds: list[int]
    episodes_per_seed: int = 1
    max_invalid: int | None = None
    #: options for every episode's reset (e.g. {"level": 2})
    env_options: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 8
    #: trial mode: groups of this many consecutive seeds, each played by one agent in
    #: order (`evals.trials`)
    trials: int = 1

    def planned(self) -> list[Key]:
        return [
            (env, seed, k)
            for env in self.envs
            for seed in self.seeds
            for k in range(self.episodes_per_seed)
        ]

    def units(self) -> list[list[Key]]:
        """What one worker plays with one agent: an episode, or a trial group in order."""
        if self.trials == 1:
            return [[key] for key in self.planned()]
        return trials.group_keys(self.envs, self.seeds, self.episodes_per_seed, self.trials)


def build_config(
    plan: EvalPlan,
    agent: Agent,
    *,
    agent_options: dict[str, Any],
    prices: dict[str, float] | None,
    seeds_spec: str,
    command: Sequence[str] = (),
) -> dict[str, Any]:
    """`config.json`: what identifies the run (compared on resume) plus volatile notes."""
    return {
        "textenvs_version": textenvs.__version__,
        "envs": {name: textenvs.get(name).load().version for name in plan.envs},
        # the level each scenario with levels plays (reports label and read scores by it)
        "levels": {
            name: level
            for name in plan.envs
            if (level := episode_level(name, plan.env_options)) is not None
        },
        "seeds": seeds_spec,
        "seed_list": plan.seeds,
        "episodes_per_seed": plan.episodes_per_seed,
        "max_invalid": plan.max_invalid,
        "env_options": plan.env_options,
        "agent": agent.config(),
        "agent_options": agent_options,
        "prices": prices,
        "python": platform.python_version(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "concurrency": plan.concurrency,
        "command": list(command),
        **({"trials": plan.trials} if plan.trials > 1 else {}),
    }


def default_command() -> list[str]:
    return ["textenvs", *sys.argv[1:]]
