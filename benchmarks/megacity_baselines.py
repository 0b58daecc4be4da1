"""Megacity baselines: victories and returns of reference policies over many seeds.

Policies: the scripted planner (`planner`), the fixed recipe that won v1 (`recipe`) and
the same without conduits on its sites (`recipe-no-damping`), a naive surface builder
(`naive`), one fixed command sequence for every seed (`fixed`), `wait` forty times,
uniformly random commands (`random`), and two reward farmers (`farm-swap`, `farm-dig`);
see `textenvs.agents.scripted.megacity_baselines`. What the planner's victories need is
measured by `benchmarks.megacity_needs`.
`--inject` also plays the planner with one unreadable reply at a turn drawn per seed, and
reports how many of the seeds it wins cleanly it still wins. `--ablate NAME` switches one
hidden mechanism off (in the world and in the planner's model alike) to show it matters.

    nice python -m benchmarks.megacity_baselines --seeds 0-499 [--policies planner,naive]
        [--level N] [--inject] [--ablate pull,seam-flow,relief,conduit-gravity,reversal,draw]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

import textenvs
from benchmarks._common import table
from textenvs.agents.scripted import ScriptedPolicy
from textenvs.agents.scripted.megacity import MegacityPolicy, rebuild
from textenvs.agents.scripted.megacity_baselines import BASELINES
from textenvs.episodes.loop import context_for
from textenvs.scenarios.megacity import physics
from textenvs.scenarios.megacity.parameters import PHYSICS, Physics

POLICIES = ["planner", *BASELINES, "random"]
UNREADABLE = "I am not sure what to do here."
#: mechanism -> the `Physics` numbers that switch it off
ABLATIONS: dict[str, dict[str, int]] = {
    "pull": {"pull_on_seam": 0, "pull_beside_seam": 0},
    "seam-flow": {"seam_flow_pct": 0},
    "relief": {"seam_relief": 0, "flank_relief": 0},
    "conduit-gravity": {"conduit_seam_gain": 1, "conduit_damp": 0},
    "reversal": {"reversal_period": 10_000},
    "draw": {"district_draw": 0, "district_draw_connected": 0},
}


def chooser(
    name: str,
    env: Any,
    seed: int,
    without: frozenset[str] = frozenset(),
    physics: Physics = PHYSICS,
) -> tuple[Callable[[str, dict[str, Any]], str], ScriptedPolicy | None]:
    """A function (observation text, info) -> command for one episode, and the policy."""
    if name == "random":
        rng = np.random.default_rng(seed)
        return lambda _text, info: env.random_command(info, rng), None
    context = context_for(env, seed)
    if name == "planner":
        policy: ScriptedPolicy = MegacityPolicy(context, without, physics)
    else:
        policy = BASELINES[name](context)
    return lambda _text, info: policy.choose(info["observation"]), policy


PLAN_USES = {
    "relief dig": lambda state, plan: bool(plan.digs),
    "seam site": lambda state, plan: any(c in physics.seam_cells(state) for c, _m in plan.sites),
    "lodestone": lambda state, plan: any(m == "lodestone" for _c, m in plan.sites),
    "one tap": lambda state, plan: len(state.conduits) <= 3,
}
plan_uses: Counter[str] = Counter()


def play(
    name: str,
    seed: int,
    inject_at: int | None = None,
    without: frozenset[str] = frozenset(),
    level: int | None = None,
    physics: Physics = PHYSICS,
) -> tuple[bool, float]:
    """One episode at `level` (default: the scenario's): (victory, return). `inject_at`
    replaces that turn's reply with prose the parser cannot read; `without` is what the
    planner must do without, `physics` the world both it and the planner run on. The
    planner's winning plans are tallied in `plan_uses`."""
    env = textenvs.make("megacity", physics=physics)
    text, info = env.reset(seed=seed, options=None if level is None else {"level": level})
    choose, policy = chooser(name, env, seed, without, physics)
    total = 0.0
    for turn in range(env.max_steps):
        command = choose(text, info)
        if turn == inject_at:
            command = UNREADABLE
        text, reward, terminated, truncated, info = env.step(command)
        total += reward
        if terminated or truncated:
            break
    if isinstance(policy, MegacityPolicy) and policy.plan and info["success"] and inject_at is None:
        final = rebuild(info["observation"], physics)
        plan_uses.update(k for k, uses in PLAN_USES.items() if uses(final, policy.plan))
    return bool(info["success"]), total


def seeds_of(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def ablations(names: str) -> Physics:
    """The physics with each mechanism in a comma-separated list switched off."""
    constants: dict[str, int] = {}
    for name in names.split(","):
        if name not in ABLATIONS:
            raise ValueError(f"unknown mechanism {name!r} (known: {', '.join(ABLATIONS)})")
        constants |= ABLATIONS[name]
    return replace(PHYSICS, **constants)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0-499", help="a range like 0-499 (default)")
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated")
    parser.add_argument("--level", type=int, help="the level (default: the scenario's)")
    parser.add_argument("--inject", action="store_true", help="also the injection run")
    parser.add_argument(
        "--ablate", help=f"switch mechanisms off, comma-separated: {', '.join(ABLATIONS)}"
    )
    args = parser.parse_args()
    try:
        seeds = seeds_of(args.seeds)
        names = [n.strip() for n in args.policies.split(",") if n.strip()]
        unknown = [n for n in names if n not in POLICIES]
        if unknown or not seeds:
            raise ValueError(f"unknown policy {unknown[0]!r}" if unknown else "no seeds")
        variant = ablations(args.ablate) if args.ablate else PHYSICS
    except ValueError as exc:
        sys.exit(f"megacity_baselines: {exc} (policies: {', '.join(POLICIES)})")
    report(args, names, seeds, variant)


def report(args: argparse.Namespace, names: list[str], seeds: list[int], physics: Physics) -> None:
    rows = []
    wins_by: dict[str, list[bool]] = {}
    for name in names:
        started = time.perf_counter()
        results = [play(name, seed, level=args.level, physics=physics) for seed in seeds]
        wins_by[name] = [won for won, _ret in results]
        returns = [ret for _won, ret in results]
        rows.append(
            [
                name,
                f"{sum(wins_by[name])} / {len(seeds)}",
                f"{100 * sum(wins_by[name]) / len(seeds):.1f}%",
                f"{statistics.mean(returns):.1f}",
                f"{max(returns):.1f}",
                f"{time.perf_counter() - started:.0f}s",
            ]
        )
    label = f" (ablated: {args.ablate})" if args.ablate else ""
    level = "" if args.level is None else f", level {args.level}"
    print(f"Megacity baselines, seeds {args.seeds}{level}{label}")
    print(table(["policy", "victories", "rate", "mean return", "max return", "time"], rows))
    if plan_uses:
        uses = ", ".join(f"{k} {v}" for k, v in sorted(plan_uses.items()))
        print(f"planner victories whose plan uses: {uses}")
    if args.inject:
        won = [s for s, ok in zip(seeds, wins_by.get("planner") or [], strict=False) if ok]
        if "planner" not in wins_by:
            won = [s for s in seeds if play("planner", s, level=args.level, physics=physics)[0]]
        kept = sum(
            play("planner", s, inject_at=s % 40, level=args.level, physics=physics)[0] for s in won
        )
        print(
            f"planner with one unreadable reply at turn (seed mod 40): wins {kept} of the "
            f"{len(won)} seeds it wins cleanly ({100 * kept / max(1, len(won)):.1f}%)"
        )


if __name__ == "__main__":
    main()
