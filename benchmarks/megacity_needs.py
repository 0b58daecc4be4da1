"""Megacity: which mechanisms decide the planner's victories, at one level.

A victory *needs* a mechanism when the planner wins the seed with every capability and
loses it with that one taken away (`textenvs.agents.scripted.megacity_reference`, whose
four mechanisms the published bands measure per level: relief dig, seam flow, shaft,
research); two more here: `tap` (no seam taps, so power comes only from base generation
and storage) and `load transfer` (no excavation relief in the world and the planner's
model). Runs on at most `--workers` processes (default 2).

    nice python -m benchmarks.megacity_needs --seeds 0-499 [--level 2] [--workers 2]
        [--variants shaft,relief dig,load transfer,seam flow,research,tap]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

from benchmarks._common import table
from benchmarks.megacity_baselines import ABLATIONS, seeds_of
from textenvs.agents.scripted.megacity_reference import NEEDS, play
from textenvs.evals.measure_bands import play_agent
from textenvs.scenarios.megacity.parameters import PHYSICS, Physics

#: name -> (what the planner must do without, the physics the world runs on)
VARIANTS: dict[str, tuple[frozenset[str], Physics]] = {
    "full": (frozenset(), PHYSICS),
    **NEEDS,
    "load transfer": (frozenset({"relief"}), replace(PHYSICS, **ABLATIONS["relief"])),
    "tap": (frozenset({"tap"}), PHYSICS),
}


def _run(task: tuple[str, int, int | None]) -> tuple[str, int, bool, float]:
    variant, seed, level = task
    without, physics = VARIANTS[variant]
    won, total = play(("planner", without, physics, seed, level), play_agent)
    return variant, seed, won, total


def measure(
    seeds: list[int], workers: int, variants: list[str], level: int | None = None
) -> dict[str, dict[int, tuple[bool, float]]]:
    """{variant: {seed: (victory, return)}}, always with the "full" planner."""
    variants = ["full", *(v for v in variants if v != "full")]
    results: dict[str, dict[int, tuple[bool, float]]] = {v: {} for v in variants}
    tasks = [(v, s, level) for v in variants for s in seeds]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for done, (variant, seed, won, total) in enumerate(pool.map(_run, tasks, chunksize=8), 1):
            results[variant][seed] = (won, total)
            if done % 100 == 0:
                print(f"  {done} / {len(tasks)} episodes", file=sys.stderr, flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0-499", help="a range like 0-499 (default)")
    parser.add_argument("--level", type=int, help="the level (default: the scenario's)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--variants", default=",".join(list(VARIANTS)[1:]), help="comma-separated")
    args = parser.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    try:
        seeds = seeds_of(args.seeds)
    except ValueError:
        sys.exit(f"megacity_needs: bad --seeds {args.seeds!r} (a range like 0-499)")
    if unknown:
        sys.exit(f"megacity_needs: unknown variant {unknown[0]!r} (known: {', '.join(VARIANTS)})")
    started = time.perf_counter()
    results = measure(seeds, max(1, args.workers), variants, args.level)
    wins = [s for s in seeds if results["full"][s][0]]
    rows: list[list[Any]] = [["(none)", f"{len(wins)} / {len(seeds)}", "", ""]]
    for variant in list(results)[1:]:
        kept = sum(results[variant][s][0] for s in seeds)
        needed = sum(1 for s in wins if not results[variant][s][0])
        share = f"{100 * needed / max(1, len(wins)):.1f}%"
        rows.append([variant, f"{kept} / {len(seeds)}", f"{needed}", share])
    level = "" if args.level is None else f", level {args.level}"
    print(f"Megacity: what the planner's victories need, seeds {args.seeds}{level}")
    print(table(["taken away", "planner wins", "victories lost", "share of victories"], rows))
    returns = sorted(results["full"][s][1] for s in wins)
    if returns:
        quartiles = statistics.quantiles(returns, n=4) if len(returns) > 1 else returns * 3
        print(
            f"planner victories' returns: min {returns[0]:.1f}, quartiles "
            + " / ".join(f"{q:.1f}" for q in quartiles)
            + f", max {returns[-1]:.1f}"
        )
    print(f"({time.perf_counter() - started:.0f}s on {args.workers} processes)")


if __name__ == "__main__":
    main()
