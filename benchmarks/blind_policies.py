"""Observation-blind policies against runs that should read: does a run beat them all?

    python -m benchmarks.blind_policies runs/em-sft runs/em-base --env em-anomaly --seeds 0-99

Plays, on the seeds, every fixed cycle of up to `--length` of the scenario's commands (a
constant command is a cycle of one; `east, north` repeats east then north) and the
random agent, none of which looks at what it is shown; with `--mix`, also a policy per run
folder that draws each command at random at the run's own frequencies (a run whose gain
is a habit, such as leaning west, is matched by its mix); then compares each run folder
given with every one of them by the paired 95% interval of the scenario's headline
(`evals/paired.py`, the figure `textenvs report` shows for two runs). A run beats the
blind policies when even the interval against the strongest of them excludes 0. Prints
the strongest blind policies and, for each run, its interval against each of them.
`--env-option KEY=VALUE` plays them at the scenario options the runs were played at (a
Magnetic Field level, a variant).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

import textenvs
from textenvs.agents import make_agent
from textenvs.cli.common import env_option_argument, env_options_from_args
from textenvs.episodes.loop import run_episode
from textenvs.episodes.protocol import Agent, Decision
from textenvs.episodes.specs import parse_seeds
from textenvs.evals import store
from textenvs.evals.bands import episode_headline
from textenvs.evals.paired import paired_differences
from textenvs.evals.records import episode_record

#: draws in a row that bring no new command before `commands` stops looking
QUIET = 3000


class CycleAgent(Agent):
    """Repeats `cycle` whatever it is shown."""

    name = "cycle"

    def __init__(self, cycle: tuple[str, ...]) -> None:
        self.cycle = cycle
        self.turn = 0

    def reset(self, context: Any) -> None:
        super().reset(context)
        self.turn = 0

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        command = self.cycle[self.turn % len(self.cycle)]
        self.turn += 1
        return Decision(command)


class MixAgent(Agent):
    """Draws every command at random at fixed frequencies, whatever it is shown; seeded
    from the episode seed, so a seed always gives the same episode."""

    name = "mix"

    def __init__(self, frequencies: Counter[str]) -> None:
        self.commands = list(frequencies)
        self.weights = list(frequencies.values())
        self.rng = random.Random(0)

    def reset(self, context: Any) -> None:
        super().reset(context)
        self.rng = random.Random(context.seed)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        return Decision(self.rng.choices(self.commands, self.weights)[0])


def command_frequencies(run: Path) -> Counter[str]:
    """How often the run played each command (readable replies only)."""
    played: Counter[str] = Counter()
    for record in store.read_episodes(run):
        turns = store.read_turns(run, record)
        played.update(command for turn in turns if (command := store.command_read(turn)))
    return played


def commands(env_name: str, options: dict[str, Any]) -> list[str]:
    """The commands the scenario's random agent plays from its opening state: a form with
    a placeholder (`enter X`, `excavate CELL`, `A north|south|...`) stands for every
    command it can be, so the forms' own text is never played. Drawn until `QUIET` draws
    in a row bring none new."""
    env = textenvs.make(env_name)
    _, info = env.reset(seed=0, options=options or None)
    rng = np.random.default_rng(0)
    found: set[str] = set()
    quiet = 0
    while quiet < QUIET:
        command = env.random_command(info, rng)
        quiet = quiet + 1 if command in found else 0
        found.add(command)
    return sorted(found)


def cycles(forms: list[str], length: int, most: int) -> list[tuple[str, ...]]:
    """Every cycle of `length` of the `forms`, or where there are more than `most` (Squad
    Recon's 216 orders make 46,656 pairs), a seeded draw of `most` of them."""
    if len(forms) ** length <= most:
        return list(itertools.product(forms, repeat=length))
    rng = random.Random(length)
    drawn: set[tuple[str, ...]] = set()
    while len(drawn) < most:
        drawn.add(tuple(rng.choice(forms) for _ in range(length)))
    return sorted(drawn)


def play(
    env_name: str, agent: Agent, seeds: list[int], options: dict[str, Any]
) -> list[dict[str, Any]]:
    env = textenvs.make(env_name)
    records = []
    for seed in seeds:
        result = asyncio.run(run_episode(env, agent, seed, options=options or None))
        records.append(episode_record(result, (env_name, seed, 0), None, ""))
    return records


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="*", type=Path, help="run folders of `textenvs eval`")
    p.add_argument("--env", required=True, help="scenario")
    p.add_argument("--seeds", default="0-99", help="seeds (0-99)")
    p.add_argument("--length", type=int, default=3, help="longest cycle (3)")
    p.add_argument("--show", type=int, default=5, help="strongest policies shown (5)")
    p.add_argument(
        "--most",
        type=int,
        default=2000,
        help="cycles of a length played at most; past it, a seeded draw (2000)",
    )
    p.add_argument("--mix", action="store_true",
                   help="also each run's command frequencies, drawn at random")  # fmt: skip
    env_option_argument(p)  # as the runs were played: a level, a variant
    args = p.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    try:
        options = env_options_from_args(args)
        forms = commands(args.env, options)
    except ValueError as exc:
        p.error(str(exc).splitlines()[0])
    policies: dict[str, list[dict[str, Any]]] = {
        "random": play(args.env, make_agent("random"), seeds, options)
    }
    drawn = []
    for length in range(1, args.length + 1):
        played = cycles(forms, length, args.most)
        if len(played) < len(forms) ** length:
            drawn.append(f"cycles of {length}: {len(played):,} of {len(forms) ** length:,} drawn")
        for cycle in played:
            policies[", ".join(cycle)] = play(args.env, CycleAgent(cycle), seeds, options)
    for run in args.runs if args.mix else []:
        frequencies = command_frequencies(run)
        total = sum(frequencies.values())
        mix = ", ".join(f"{c} {n / total:.0%}" for c, n in frequencies.most_common())
        print(f"the mix of {run}: {mix}")
        policies[f"the mix of {run}"] = play(args.env, MixAgent(frequencies), seeds, options)

    def mean_headline(records: list[dict[str, Any]]) -> float:
        values = [episode_headline(args.env, r) or 0.0 for r in records]
        return sum(values) / len(values)

    ranked = sorted(policies, key=lambda name: -mean_headline(policies[name]))
    sampled = f" ({'; '.join(drawn)})" if drawn else ""
    print(
        f"{len(policies)} blind policies on {len(seeds)} seeds of {args.env}{sampled}, of its "
        f"{len(forms)} commands; the strongest:"
    )
    for name in ranked[: args.show]:
        print(f"  {name}: headline {mean_headline(policies[name]):.3f}")
    for run in args.runs:
        records = [r for r in store.read_episodes(run) if r["seed"] in set(seeds)]
        worst = None
        for name in ranked:
            paired = paired_differences(args.env, policies[name], records)
            low = (paired.get("headline_ci") or [float("-inf")])[0]
            if worst is None or low < worst[1]:
                worst = (name, low, paired)
        assert worst is not None
        name, low, paired = worst
        diff, ci = paired["headline_diff"], paired["headline_ci"]
        verdict = "beats every blind policy" if low > 0 else "does NOT beat them all"
        print(
            f"{run}: headline {paired['headline_run']:.3f} on {paired['pairs']} paired "
            f"seeds; against the hardest to beat ({name}: {paired['headline_base']:.3f}) "
            f"{diff:+.3f} [{ci[0]:+.3f}, {ci[1]:+.3f}]: {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
