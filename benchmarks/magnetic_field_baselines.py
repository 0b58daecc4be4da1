"""Magnetic Field baselines per level: scripted (induces the rule), lookup-only, random.

Plays every seed at every level with each agent through the episode runner and prints
mean reward, episodes at 1.0 and mean steps; also how often generation had to fall back
to showing an undetermined window's own pattern as a hint. The figures in
`docs/scenarios/magnetic-field.md` come from this script.

    nice python -m benchmarks.magnetic_field_baselines [--seeds 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

import numpy as np

import textenvs
from benchmarks._common import table
from textenvs.agents import Agent, make_agent
from textenvs.agents.scripted.magnetic_field_lookup import MagneticFieldLookupAgent
from textenvs.episodes.loop import run_episode
from textenvs.scenarios.magnetic_field import rules
from textenvs.scenarios.magnetic_field.state import LEVELS

AGENTS = ("scripted", "lookup", "random")


def agent_named(name: str) -> Agent:
    return MagneticFieldLookupAgent() if name == "lookup" else make_agent(name)


async def scores(agent_name: str, level: int, seeds: range) -> list[tuple[float, int]]:
    """(reward, steps) of each seed's episode; a fresh env and agent per episode."""
    results = []
    for seed in seeds:
        env = textenvs.make("magnetic-field")
        result = await run_episode(env, agent_named(agent_name), seed, options={"level": level})
        if result.error:
            raise RuntimeError(f"{agent_name}, level {level}, seed {seed}: {result.error}")
        results.append((result.total_reward, result.steps))
    return results


def fallback_seeds(level: int, seeds: range) -> int:
    """Seeds whose hints needed the fallback (more hints than the level's count)."""
    count = rules.LEVEL_SPECS[level].hint_count
    return sum(
        len(rules.initial_state(np.random.default_rng(seed), level).hints) > count
        for seed in seeds
        if level > 0
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=1000, help="seeds 0..N-1 per level")
    args = parser.parse_args()
    seeds = range(args.seeds)
    rows = []
    for level in LEVELS:
        for name in AGENTS:
            played = asyncio.run(scores(name, level, seeds))
            rewards = [r for r, _ in played]
            rows.append(
                [
                    str(level),
                    name,
                    f"{statistics.fmean(rewards):.3f}",
                    f"{sum(r == 1.0 for r in rewards)}/{len(rewards)}",
                    f"{statistics.fmean(s for _, s in played):.1f}",
                ]
            )
        print(f"level {level}: hint fallback on {fallback_seeds(level, seeds)} seeds", flush=True)
    header = ["level", "agent", "mean reward", "at 1.0", "mean steps"]
    print(table(header, rows))


if __name__ == "__main__":
    main()
