"""Trial mode (`--trials K`): one agent plays K consecutive episodes of a scenario.

A run's seed list is cut into groups of K consecutive seeds (seeds 0-999 with K = 5:
0-4, 5-9, ...), so every run with the same seeds plays the same worlds in the same
order and runs stay comparable. One agent plays a group's trials in order, told each
episode's place (`EpisodeContext.trial`) and, through `Agent.end_episode`, each end;
the LLM agent keeps one conversation across them. Groups are independent: they run in
parallel like single episodes.

A group is the unit of a run: a trial that ends in an agent error stops its group, and
a resume drops the lines of every group that is not complete and plays it again from
its first trial, so no group is ever counted half-played.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from textenvs.episodes.loop import run_episode
from textenvs.episodes.protocol import AGENT_ERROR, Agent
from textenvs.episodes.record import EpisodeResult, Turn
from textenvs.evals.metrics import Key, Record, key_of


def check_trials(seed_count: int, trials: int) -> None:
    """A `ValueError` (a usage mistake) unless the seeds split into groups of `trials`."""
    if trials < 1:
        raise ValueError(f"--trials must be at least 1, not {trials}")
    if seed_count % trials:
        raise ValueError(
            f"--trials {trials} plays the seeds in groups of {trials}, but there are "
            f"{seed_count} seeds: give a multiple of {trials} (e.g. 0-{200 * trials - 1} "
            "for 200 groups)"
        )


def group_keys(
    envs: Sequence[str], seeds: Sequence[int], episodes_per_seed: int, trials: int
) -> list[list[Key]]:
    """Every trial group as its keys in trial order: per env and episode index, the
    seeds cut into consecutive runs of `trials`."""
    return [
        [(env, seed, episode) for seed in seeds[start : start + trials]]
        for env in envs
        for episode in range(episodes_per_seed)
        for start in range(0, len(seeds), trials)
    ]


def config_groups(config: dict[str, Any]) -> list[list[Key]]:
    """The trial groups of the run that `config` (its `config.json`) describes."""
    return group_keys(
        list(config["envs"]),
        list(config["seed_list"]),
        int(config["episodes_per_seed"]),
        int(config.get("trials", 1)),
    )


def trial_fields(group: Sequence[Key], key: Key) -> dict[str, int]:
    """What an episode line records of its place: `trial` (1-based) of `trials`, and
    `group` (the seed of the group's first trial)."""
    return {"trial": group.index(key) + 1, "trials": len(group), "group": group[0][1]}


def unfinished_groups(config: dict[str, Any], records: Sequence[Record]) -> set[Key]:
    """The keys of recorded episodes whose group is not complete (a kill or an agent
    error stopped it): a resume drops them and plays the group from its first trial."""
    if int(config.get("trials", 1)) <= 1:
        return set()
    recorded = {key_of(r) for r in records}
    drop: set[Key] = set()
    for group in config_groups(config):
        present = [key for key in group if key in recorded]
        if present and len(present) < len(group):
            drop.update(present)
    return drop


def groups_with_errors(config: dict[str, Any], records: Sequence[Record]) -> set[Key]:
    """The keys of every group with an agent error in any trial (`--retry-errors`
    replays such a group whole)."""
    errors = {key_of(r) for r in records if r.get("outcome") == AGENT_ERROR}
    return {key for group in config_groups(config) if errors & set(group) for key in group}


async def play_group(
    env: Any,
    agent: Agent,
    seeds: Sequence[int],
    *,
    options: dict[str, Any] | None = None,
    max_invalid: int | None = None,
    on_turn: Callable[[Turn], None] | None = None,
    repeat: int = 0,
) -> AsyncIterator[EpisodeResult]:
    """Play the trials in order with one agent, yielding each episode as it ends; stop
    after one that ends in an agent error (the conversation cannot go on)."""
    for trial, seed in enumerate(seeds, 1):
        result = await run_episode(
            env,
            agent,
            seed,
            options=options,
            on_turn=on_turn,
            max_invalid=max_invalid,
            trial=trial,
            trials=len(seeds),
            repeat=repeat,
        )
        yield result
        if result.outcome == AGENT_ERROR:
            return
