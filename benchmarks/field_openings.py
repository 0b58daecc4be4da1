"""EM Anomaly openings that end where the field is first seen: the state to branch from.

    python -m benchmarks.field_openings RUN --out openings.json [--min-steps-left 8]

For each seed of an eval run (its first episode), the commands played before the first
observation whose 3x3 scan shows a reading above 0 while the agent's own tile reads
below 2 (a reading to climb, not yet one to mark on), if that observation still leaves
`--min-steps-left` steps. The file is what `textenvs eval --openings` takes: every
episode of a seed then starts from that state, so what is sampled from it is the climb,
the part of an episode where a model that finds the field still loses it (`docs/training.md`).
Random play (`--agent random`, seconds for thousands of seeds) finds the field on about a
third of its seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import textenvs
from benchmarks.reading_counts import ENV, field_above_zero, replayed_observations
from textenvs.evals import store


def field_opening(
    env: Any, seed: int, commands: list[str], min_steps_left: int
) -> list[str] | None:
    """The commands before the episode's first climbing state (None: it had none, or too
    late)."""
    for number, observation in enumerate(replayed_observations(env, seed, commands)):
        if observation["steps_left"] < min_steps_left:
            return None
        if field_above_zero(observation) and observation["view"][1][1] < 2:
            return commands[:number]
    return None


def openings_of(run: Path, min_steps_left: int) -> tuple[dict[str, list[str]], int]:
    """The run's openings by seed (its first episode of each seed), and how many seeds."""
    env = textenvs.make(ENV)
    firsts: dict[int, dict[str, Any]] = {}
    for record in store.read_episodes(run):
        if record["env"] == ENV and record.get("episode", 0) == 0:
            firsts.setdefault(record["seed"], record)
    openings: dict[str, list[str]] = {}
    for seed in sorted(firsts):
        turns = store.read_turns(run, firsts[seed])
        commands = [store.command_read(turn) for turn in turns]
        if None in commands:  # an unreadable command cannot be played as an opening
            commands = commands[: commands.index(None)]
        opening = field_opening(env, seed, commands, min_steps_left)
        if opening is not None:
            openings[str(seed)] = opening
    return openings, len(firsts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="an eval run folder of em-anomaly episodes")
    parser.add_argument("--out", type=Path, required=True, help="the openings file to write")
    parser.add_argument(
        "--min-steps-left",
        type=int,
        default=8,
        help="skip a seed whose first climbing state leaves fewer steps (8)",
    )
    parser.add_argument("--limit", type=int, default=None, help="keep the first N seeds")
    parser.add_argument(
        "--skip",
        type=int,
        default=0,
        help="leave out the first N seeds found (a later batch: --skip 48 --limit 48 are "
        "the 48 after --limit 48's)",
    )
    args = parser.parse_args(argv)
    try:
        openings, seeds = openings_of(args.run, args.min_steps_left)
    except (OSError, store.RunDirError) as exc:
        print(f"field_openings: error: {exc}", file=sys.stderr)
        return 2
    found = list(openings.items())[args.skip :]
    kept = dict(found[: args.limit])
    args.out.write_text(json.dumps(kept, indent=0) + "\n", encoding="utf-8")
    lengths = [len(commands) for commands in kept.values()]
    mean = sum(lengths) / max(1, len(lengths))
    print(
        f"{len(openings)} of {seeds} seeds reach a reading to climb with {args.min_steps_left}+ "
        f"steps left; wrote {len(kept)} to {args.out} (openings of {mean:.1f} commands on average)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
