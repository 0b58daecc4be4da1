"""Which episodes to play: scenarios by name, seeds as ranges, reset options checked once.

An episode is (scenario, seed, reset options). Seeds are given as `textenvs eval` takes
them (`"0-99"`, `"3"`, `"0-4,10"`) or as ints; scenario names are looked up in the
registry (`"all"` means every scenario), so the callers follow its ids and versions.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from textenvs.core import registry
from textenvs.core.parsing import excerpt
from textenvs.episodes.envs import EpisodeEnv

Seeds = str | int | Sequence[int]

#: `textenvs train`'s training seeds when none are given (held out of every eval default)
TRAINING_SEEDS = "1000-9999"
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


def consecutive_runs(seeds: list[int]) -> list[list[int]]:
    """`seeds` sorted, each once, cut where a seed is skipped: `[5, 0, 1, 2]` ->
    `[[0, 1, 2], [5]]`."""
    runs: list[list[int]] = []
    for seed in sorted(set(seeds)):
        if runs and seed == runs[-1][-1] + 1:
            runs[-1].append(seed)
        else:
            runs.append([seed])
    return runs


def seed_ranges(seeds: list[int]) -> str:
    """The shortest `parse_seeds` spec of `seeds`: `[0, 1, 2, 5]` -> `"0-2,5"`."""
    return ",".join(
        str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in consecutive_runs(seeds)
    )


def resolve_envs(spec: str) -> list[str]:
    """`"all"` (every registered scenario, at run time) or a comma list of names."""
    if spec.strip().lower() == "all":
        return registry.names()
    names = [registry.get(name.strip()).name for name in spec.split(",") if name.strip()]
    if not names:
        raise ValueError("--env needs a scenario name, a comma list, or 'all'")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"--env names {', '.join(twice)} more than once; name each once")
    return names


@dataclass(frozen=True)
class EpisodeSpec:
    env: str
    seed: int
    options: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return f"{self.env}-{self.seed}"

    def row(self) -> dict[str, Any]:
        """The episode as a training example (a dataset row): `env`, `seed` and `options`
        as JSON text, so rows of several scenarios share one column type."""
        return {
            "env": self.env,
            "seed": self.seed,
            "options": json.dumps(self.options or {}, sort_keys=True),
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> EpisodeSpec:
        """The episode of a dataset row (`row()`'s columns; `options` as JSON text, a
        dict or None; other columns are not read)."""
        options = row.get("options")
        chosen = json.loads(options) if isinstance(options, str) else options
        return cls(row["env"], int(row["seed"]), dict(chosen) if chosen else None)


def seed_list(seeds: Seeds) -> list[int]:
    if isinstance(seeds, str):
        return parse_seeds(seeds)
    if isinstance(seeds, int):
        return [seeds]
    return sorted({int(s) for s in seeds})


def check_reset_options(names: Sequence[str], options: Mapping[str, Any] | None) -> None:
    """Reset options fit the scenarios: a single one (options differ by scenario) that
    takes their keys and values, checked by resetting it once, so a bad one fails here
    (a one-line ValueError) rather than in every episode."""
    if not options:
        return
    if len(names) > 1:
        raise ValueError("reset options need a single scenario (options differ by scenario)")
    env = registry.make(names[0])
    try:
        try_reset_options(env, options)
    finally:
        env.close()


def try_reset_options(env: EpisodeEnv, options: Mapping[str, Any], seed: int = 0) -> None:
    """Reset `env` once with `options` (on `seed`): a key or value it does not take is a
    one-line ValueError."""
    try:
        env.reset(seed=seed, options=dict(options))
    except ValueError as exc:
        raise ValueError(str(exc).splitlines()[0]) from None


def episode_specs(
    env: str, seeds: Seeds, options: dict[str, Any] | None = None
) -> list[EpisodeSpec]:
    """Every (scenario, seed) pair, in scenario-then-seed order, with `options` for each
    reset (checked here: `check_reset_options`)."""
    names = resolve_envs(env)
    seeds_ = seed_list(seeds)
    if not names or not seeds_:
        raise ValueError("no episodes: give at least one scenario and one seed")
    check_reset_options(names, options)
    return [
        EpisodeSpec(name, seed, dict(options) if options else None)
        for name in names
        for seed in seeds_
    ]
