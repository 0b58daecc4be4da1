"""Measuring the reference bands (`bands.py` reads them): each scenario's random and
scripted agents played on the band seeds, its ceiling, and any reference runs its
scripted agents define, written to the package's `bands.json`:

    python -m textenvs.evals.bands --seeds 0-999 [--env megacity,...] [--workers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import textenvs
from textenvs.agents import make_agent
from textenvs.agents.scripted import load_reference
from textenvs.core.env import TextEnv
from textenvs.episodes.loop import run_episode
from textenvs.episodes.protocol import Agent
from textenvs.episodes.specs import parse_seeds, resolve_envs
from textenvs.evals.bands import BANDS_FILE, headline, headline_value, load_bands
from textenvs.evals.metrics import summarize
from textenvs.evals.records import episode_record
from textenvs.evals.skills import scoring_of

Play = tuple[str, str, int, dict[str, Any] | None]  # (env, agent, seed, reset options)


def play_agent(
    env: TextEnv[Any, Any], agent: Agent, seed: int, options: dict[str, Any] | None
) -> tuple[bool, float]:
    """One episode through the eval loop: (success, return). Reference runs play theirs
    with it."""
    result = asyncio.run(run_episode(env, agent, seed, options=options))
    return result.success, result.total_reward


def play_one(task: Play) -> dict[str, Any]:
    """One episode's record (with skills)."""
    env, agent, seed, options = task
    result = asyncio.run(run_episode(textenvs.make(env), make_agent(agent), seed, options=options))
    return episode_record(result, (env, seed, 0), None, "")


def play_many(
    env: str,
    agent: str,
    seeds: Sequence[int],
    options: dict[str, Any] | None = None,
    workers: int = 1,
) -> list[dict[str, Any]]:
    """One episode per seed, on `workers` processes (in this one when 1): the records."""
    tasks = [(env, agent, seed, options) for seed in seeds]
    if workers <= 1:
        return [play_one(task) for task in tasks]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(play_one, tasks, chunksize=8))


def reference_runs(
    env: str, level: int | None, seeds: Sequence[int], scripted: list[dict[str, Any]], workers: int
) -> dict[str, Any]:
    """A scenario's reference runs beyond random and scripted, from its scripted agents
    (`agents.scripted.load_reference`; Megacity's baselines and what its planner's
    victories need); {} for a scenario without any."""
    measure = load_reference(env)
    if measure is None:
        return {}
    wins = {int(r["seed"]): bool(r["success"]) for r in scripted}
    note = lambda text: print(f"{env} level {level}: {text}", file=sys.stderr, flush=True)  # noqa: E731
    return measure(level, seeds, wins, play_agent, workers, note)


def measure_band(
    env: str, seeds: Sequence[int], seeds_spec: str, level: int | None = None, workers: int = 1
) -> dict[str, Any]:
    started = time.perf_counter()
    options = None if level is None else {"level": level}
    records = {a: play_many(env, a, seeds, options, workers) for a in ("random", "scripted")}
    runs = {agent: summarize(rs) for agent, rs in records.items()}
    values = {agent: headline_value(env, s) or 0.0 for agent, s in runs.items()}
    ceiling, kind, method = scoring_of(env).ceiling(seeds, values["scripted"])
    band = {
        "version": textenvs.get(env).load().version,
        **({"level": level} if level is not None else {}),
        "seeds": seeds_spec,
        "episodes": len(seeds),
        "metric": headline(env).field,
        "metric_label": headline(env).label,
        "random": values["random"],
        "scripted": values["scripted"],
        "ceiling": ceiling,
        "ceiling_kind": kind,
        "ceiling_method": method,
        "success_rate": {a: s["success_rate"] for a, s in runs.items()},
        "mean_return": {a: s["mean_return"] for a, s in runs.items()},
        "skills": {a: s["skills"] for a, s in runs.items()},
    }
    band |= reference_runs(env, level, seeds, records["scripted"], workers)
    band["seconds"] = round(time.perf_counter() - started, 1)
    return band


def measure_scenario(
    env: str,
    seeds: Sequence[int],
    seeds_spec: str,
    stored: dict[str, Any] | None,
    levels: Sequence[int] | None = None,
    workers: int = 1,
) -> dict[str, Any]:
    """A scenario's entry: its band, or for a scenario with levels a band per level
    (`levels`: only these are measured again, the others are kept from `stored`)."""
    scenario = textenvs.get(env).load()
    if not scenario.levels:
        return measure_band(env, seeds, seeds_spec, None, workers)
    kept = (stored or {}).get("levels", {}) if levels else {}
    entry = {"default_level": scenario.default_level, "levels": dict(kept)}
    for level in levels or scenario.levels:
        if level not in scenario.levels:
            raise ValueError(f"{env} has levels {scenario.levels}, not {level}")
        print(f"{env} level {level}: {len(seeds)} seeds ...", file=sys.stderr, flush=True)
        entry["levels"][str(level)] = band = measure_band(env, seeds, seeds_spec, level, workers)
        report_band(f"{env} level {level}", band)
    entry["levels"] = dict(sorted(entry["levels"].items()))
    return entry


def report_band(name: str, band: dict[str, Any]) -> None:
    print(
        f"{name}: random {band['random']:.4f}, scripted {band['scripted']:.4f}, "
        f"ceiling {band['ceiling']:.4f} ({band['ceiling_kind']}), {band['seconds']} s",
        file=sys.stderr,
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:

    parser = argparse.ArgumentParser(
        prog="python -m textenvs.evals.bands",
        description="Measure the reference bands (random, scripted, ceiling; per level for "
        "a scenario with levels, and any reference runs its scripted agents define) with "
        "the project's own agents and write them to the package's bands.json. Scenarios "
        "not named with --env keep their stored band.",
    )
    parser.add_argument("--seeds", default="0-999", help="seed range (default 0-999)")
    parser.add_argument("--env", default="all", help="scenarios to measure (default all)")
    parser.add_argument(
        "--levels",
        help="for one scenario with levels: measure only these (e.g. 0,3), keep the others",
    )
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--out", type=Path, default=BANDS_FILE, help="file to write")
    args = parser.parse_args(argv)
    try:
        seeds = parse_seeds(args.seeds)
        envs = resolve_envs(args.env)
        levels = [int(x) for x in args.levels.split(",")] if args.levels else None
        if levels and len(envs) != 1:
            raise ValueError("--levels needs a single --env")
    except (ValueError, KeyError) as exc:
        print(f"bands: error: {exc}", file=sys.stderr)
        return 2
    data = load_bands(args.out)
    workers = max(1, args.workers)
    for env in envs:
        print(f"{env}: {len(seeds)} seeds ...", file=sys.stderr, flush=True)
        scenario = textenvs.get(env).load()
        # One level at a time, each saved when done: an interrupted run keeps those.
        chunks = [[level] for level in levels or scenario.levels] if scenario.levels else [None]
        for chunk in chunks:
            stored = data["scenarios"].get(env)
            try:
                entry = measure_scenario(env, seeds, args.seeds, stored, chunk, workers)
            except ValueError as exc:
                print(f"bands: error: {exc}", file=sys.stderr)
                return 2
            data["scenarios"][env] = entry
            if "levels" not in entry:
                report_band(env, entry)
            save(data, args.out, argv)
    print(args.out)
    return 0


def save(data: dict[str, Any], path: Path, argv: list[str] | None) -> None:
    data["scenarios"] = dict(sorted(data["scenarios"].items()))
    data["textenvs_version"] = textenvs.__version__
    data["generated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    data["command"] = "python -m textenvs.evals.bands " + " ".join(argv or sys.argv[1:])
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
