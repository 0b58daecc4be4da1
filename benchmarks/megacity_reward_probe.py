"""Megacity: can a learner on the return raise it without winning? (issue 45 item 4)

Plays, per seed and level, command sequences that never found a district (`wait`
forty times; ten research points then `wait`; scan, ten research points, a seam tap,
then `wait`) beside the planner, and sets their returns against:

- the bound from the reward code: no episode without a victory can return more than
  six districts, every rule decoded, the power bonus, `steady` on every step and the
  air index raised to 100 (integrity cannot rise above its start, and the integrity and
  air terms telescope to the final values);
- the planner's victories on the same seeds (how many return less than doing nothing);
- the planner's play with its victory taken away (its return less `victory` and
  `plan_quality`): the most a near miss of the same play earns;
- the training horizon `--turns` (a run's `--max-turns`): the passive sequences'
  return over the first turns, beside the planner's.

    nice python -m benchmarks.megacity_reward_probe --seeds 0-299 [--levels 0,1,2,3]
        [--turns 4]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import textenvs
from benchmarks._common import table
from benchmarks.megacity_baselines import chooser, seeds_of
from textenvs.scenarios.megacity import research, rules
from textenvs.scenarios.megacity.state import (
    START_AIR,
    STEP_BUDGET,
    TARGET_DISTRICTS,
    cell_name,
)

RESEARCH = ["research"] * research.TOTAL_POINTS
#: name -> the first commands (`wait` after them); "{tap}" is a seam tap of three cells
PASSIVE: dict[str, list[str]] = {
    "wait": [],
    "research, wait": RESEARCH,
    "scan, research, tap, wait": ["scan", *RESEARCH, "{tap}"],
}

#: the most an episode without a victory can return: integrity starts at its maximum and
#: the air index is at most 100, and their terms telescope to the final values
NO_VICTORY_BOUND = (
    rules.R_DISTRICT * TARGET_DISTRICTS
    + rules.R_DECODED * len(research.RULES)
    + rules.R_POWER_FIRST
    + rules.R_STEADY * STEP_BUDGET
    + rules.R_AIR_GAIN * (100 - START_AIR)
)


def commands_of(policy: str, seed: int, level: int) -> list[str]:
    """A passive policy's commands on this seed (the tap: the row seam's first 3 cells)."""
    tap = textenvs.make("megacity").world_for(seed, {"level": level}).seams[0].cells[:3]
    return [
        "conduit " + " ".join(cell_name(c) for c in tap) if c == "{tap}" else c
        for c in PASSIVE[policy]
    ]


def episode(policy: str, seed: int, level: int) -> tuple[bool, list[float], dict[str, float]]:
    """(victory, reward per turn, the last turn's reward terms)."""
    env = textenvs.make("megacity")
    text, info = env.reset(seed=seed, options={"level": level})
    planner = chooser("planner", env, seed)[0] if policy == "planner" else None
    commands = [] if planner else commands_of(policy, seed, level)
    rewards: list[float] = []
    terms: dict[str, float] = {}
    for turn in range(env.max_steps):
        if planner:
            command = planner(text, info)
        else:
            command = commands[turn] if turn < len(commands) else "wait"
        text, reward, terminated, truncated, info = env.step(command)
        rewards.append(reward)
        terms = next(e["terms"] for e in info["events"] if e["type"] == "reward")
        if terminated or truncated:
            break
    return bool(info["success"]), rewards, terms


def measure(seeds: list[int], level: int, turns: int) -> tuple[list[list[Any]], list[Any]]:
    """At `level`: a row per policy, and one row of the planner's returns set against the
    passive policies' and the bound."""
    played = {
        name: [episode(name, seed, level) for seed in seeds] for name in [*PASSIVE, "planner"]
    }
    rows: list[list[Any]] = []
    for name, episodes in played.items():
        returns = [sum(rewards) for _won, rewards, _terms in episodes]
        rows.append([
            level, name, sum(won for won, _r, _t in episodes),
            f"{statistics.mean(returns):.1f}", f"{min(returns):.1f}", f"{max(returns):.1f}",
            f"{statistics.mean(sum(r[:turns]) for _w, r, _t in episodes):.1f}",
        ])  # fmt: skip
    passive = [max(sum(played[n][i][1]) for n in PASSIVE) for i in range(len(seeds))]
    won = [(sum(r), t, p) for (w, r, t), p in zip(played["planner"], passive, strict=True) if w]
    lost = [sum(r) for w, r, _t in played["planner"] if not w]
    near = [ret - terms["victory"] - terms["plan_quality"] for ret, terms, _p in won]
    planner = [
        level, len(won), sum(ret < p for ret, _t, p in won),
        sum(ret > NO_VICTORY_BOUND for ret, _t, _p in won),
        f"{min(ret for ret, _t, _p in won):.1f}" if won else "",
        f"{max(lost):.1f}" if lost else "", f"{max(near):.1f}" if near else "",
    ]  # fmt: skip
    return rows, planner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0-299", help="a range like 0-299 (default)")
    parser.add_argument("--levels", default="0,1,2,3", help="comma-separated (default 0-3)")
    parser.add_argument("--turns", type=int, default=4, help="the training horizon (default 4)")
    args = parser.parse_args()
    try:
        seeds = seeds_of(args.seeds)
        levels = [int(x) for x in args.levels.split(",")]
    except ValueError:
        sys.exit(f"megacity_reward_probe: bad --seeds {args.seeds!r} or --levels {args.levels!r}")
    started = time.perf_counter()
    measured = [measure(seeds, level, args.turns) for level in levels]
    print(f"Megacity returns without a victory, seeds {args.seeds}, levels {args.levels}")
    header = ["level", "policy", "victories", "mean return", "min", "max", f"first {args.turns}"]
    print(table(header, [row for rows, _planner in measured for row in rows]))
    print("\nThe planner's victories against the passive policies and the bound on any")
    print(f"episode without a victory ({NO_VICTORY_BOUND:g}):")
    header = [
        "level", "victories", "below passive", f"above {NO_VICTORY_BOUND:g}", "lowest victory",
        "best non-victory", "best victory less its terms",
    ]  # fmt: skip
    print(table(header, [planner for _rows, planner in measured]))
    print(f"{time.perf_counter() - started:.0f}s")


if __name__ == "__main__":
    main()
