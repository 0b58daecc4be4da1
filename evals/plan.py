"""What an eval plays: its scenarios, seeds and episodes (`EvalPlan`), read from the
command line's `--env` and `--seeds`, and the run's `config.json`."""

from __future__ import annotations

import itertools
import platform
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import textenvs
from textenvs.agents.base import Agent
from textenvs.core.parsing import excerpt
from textenvs.core.registry import episode_level
from textenvs.evals import trials
from textenvs.evals.metrics import Key

MAX_SEEDS = 1_000_000  # a run of more would not finish; its seed list alone is 8 MB+
MAX_SEED = 2**63 - 1


def parse_seeds(spec: str) -> list[int]:
    """`"0-99"`, `"3"`, `"0-4,10,20-22"` -> sorted seeds, each named once (at most `MAX_SEEDS`, each
    below 2**63: checked before any range is expanded)."""
    ranges: list[tuple[int, int]] = []
    for part in spec.replace(" ", "").split(","):
        match = re.fullmatch(r"(\d{1,19})(?:-(\d{1,19}))?", part)
        if not match:
            raise ValueError(f"bad seed range '{part}': use N, N-M or a comma list of those")
        lo, hi = int(match[1]), int(match[2] or match[1])
        if hi < lo:
            raise ValueError(f"bad seed range '{part}': it ends before it starts; write {hi}-{lo}")
        if hi > MAX_SEED:
            raise ValueError(f"bad seed range '{part}': seeds go up to {MAX_SEED}")
        ranges.append((lo, hi))
    if sum(hi - lo + 1 for lo, hi in ranges) > MAX_SEEDS:
        raise ValueError(f"'{excerpt(spec, 40)}' names over {MAX_SEEDS:,} seeds: give fewer")
    seeds = sorted(seed for lo, hi in ranges for seed in range(lo, hi + 1))
    twice = next((a for a, b in itertools.pairwise(seeds) if a == b), None)
    if twice is not None:
        raise ValueError(f"seed {twice} is named twice in '{excerpt(spec, 40)}'; name each once")
    return seeds


def seed_ranges(seeds: list[int]) -> str:
    """The shortest `parse_seeds` spec of `seeds`: `[0, 1, 2, 5]` -> `"0-2,5"`."""
    parts: list[str] = []
    ordered = sorted(set(seeds))
    start = 0
    for i, seed in enumerate(ordered):
        if i + 1 == len(ordered) or ordered[i + 1] != seed + 1:
            lo = ordered[start]
            parts.append(str(lo) if lo == seed else f"{lo}-{seed}")
            start = i + 1
    return ",".join(parts)


def resolve_envs(spec: str) -> list[str]:
    """`"all"` (every registered scenario, at run time) or a comma list of names."""
    if spec.strip().lower() == "all":
        return textenvs.names()
    names = [textenvs.get(name.strip()).name for name in spec.split(",") if name.strip()]
    if not names:
        raise ValueError("--env needs a scenario name, a comma list, or 'all'")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"--env names {', '.join(twice)} more than once; name each once")
    return names


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
