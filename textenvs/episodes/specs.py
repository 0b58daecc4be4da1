"""What the Inspect and verifiers adapters share: the episodes to play and their scores.

An episode is (scenario, seed, reset options). Seeds are given as in `textenvs eval`
(`"0-99"`, `"3"`, `"0-4,10"`) or as ints; scenario names are looked up in the registry
(`"all"` means every scenario), so the adapters follow its ids and versions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import textenvs
from textenvs.evals.episode import EpisodeResult
from textenvs.evals.runner import parse_seeds, resolve_envs

Seeds = str | int | Sequence[int]


@dataclass(frozen=True)
class EpisodeSpec:
    env: str
    seed: int
    options: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return f"{self.env}-{self.seed}"


def seed_list(seeds: Seeds) -> list[int]:
    if isinstance(seeds, str):
        return parse_seeds(seeds)
    if isinstance(seeds, int):
        return [seeds]
    return sorted({int(s) for s in seeds})


def episode_specs(
    env: str, seeds: Seeds, options: dict[str, Any] | None = None
) -> list[EpisodeSpec]:
    """Every (scenario, seed) pair, in scenario-then-seed order. Options go to each
    reset; a bad key or value raises `ValueError` here rather than in every episode."""
    names = resolve_envs(env)
    seeds_ = seed_list(seeds)
    if not names or not seeds_:
        raise ValueError("no episodes: give at least one scenario and one seed")
    if options:
        if len(names) > 1:
            raise ValueError("reset options need a single scenario (options differ by scenario)")
        textenvs.make(names[0]).reset(seed=seeds_[0], options=options)
    return [
        EpisodeSpec(name, seed, dict(options) if options else None)
        for name in names
        for seed in seeds_
    ]


def episode_scores(result: EpisodeResult) -> dict[str, float]:
    """The per-episode numbers both adapters report (Inspect scores, verifiers metrics)."""
    return {
        "success": float(result.success),
        "return": float(result.total_reward),
        "steps": float(result.steps),
        "invalid_actions": float(result.invalid_actions),
    }
