"""The critic's one-step lookahead, played as a policy: what `--credit lookahead` knows.

    python -m benchmarks.critic_lookahead runs/or1-play runs/or2-play runs/or5-play \\
        --seeds 5000-5199

Fits the critic `textenvs train --credit critic|lookahead` fits (`training/critic.py`;
here on all the runs' fully read episodes: nothing is valued that it saw end) and plays
EM Anomaly with it, no model: at each state every command the runs play
(`lookahead.played_commands`, or `--commands`) is tried on a copy of the env and the one
worth most (`lookahead.command_values`; ties: the first in order) is played. Prints its
wins and the reactive agent's on the same seeds, and how often its command was the
reactive agent's, by the reactive agent's reason. About 7 s for 100 episodes.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import textenvs
from textenvs.agents.scripted.reactive import em_anomaly, em_anomaly_decision
from textenvs.core import registry
from textenvs.episodes.specs import parse_seeds
from textenvs.evals import store
from textenvs.training import lookahead
from textenvs.training.critic import Critic
from textenvs.training.demonstrations import recorded_episodes

ENV = "em-anomaly"


def wins(seeds: list[int], choose: Callable[[Any, dict[str, Any]], str]) -> int:
    """How many of `seeds` are won playing `choose(env, observation)` each turn (the env
    itself, so that a lookahead can try commands on copies of it)."""
    env = textenvs.make(ENV)
    won = 0
    for seed in seeds:
        _, info = env.reset(seed=seed)
        reward, ended = 0.0, False
        while not ended:
            command = choose(env, info["observation"])
            _, reward, terminated, truncated, info = env.step(command)
            ended = terminated or truncated
        won += reward > 0
    return won


def lookahead_wins(
    critic: Critic, commands: list[str], seeds: list[int]
) -> tuple[int, Counter[str], Counter[str]]:
    """The lookahead's wins on `seeds`, and by the reactive agent's reason the states met
    and those where the lookahead played the reactive agent's command."""
    met: Counter[str] = Counter()
    agreed: Counter[str] = Counter()

    def best(env: Any, observation: dict[str, Any]) -> str:
        values = lookahead.command_values(env, commands, critic)
        command = commands[lookahead.best_command(values, commands)]
        answer, reason = em_anomaly_decision(observation)
        met[reason] += 1
        agreed[reason] += command == answer
        return command

    return wins(seeds, best), met, agreed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders of `textenvs eval`")
    p.add_argument("--seeds", default="5000-5199", help="the seeds played (default 5000-5199)")
    p.add_argument(
        "--commands",
        help="comma list of the commands tried (default: those played in 1%% of the runs' "
        "episodes)",
    )
    args = p.parse_args(argv)
    for run in args.runs:
        if not (run / store.EPISODES).is_file():
            p.error(f"{run} is not a `textenvs eval` run folder (it has no {store.EPISODES})")
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as exc:
        p.error(f"--seeds: {exc}")
    episodes, _ = recorded_episodes(args.runs, ENV)
    if len({episode.success for episode in episodes}) < 2:
        p.error("the runs need won and lost episodes to fit a critic on")
    critic = Critic(episodes, registry.get(ENV).load().report_lines)
    commands = args.commands.split(",") if args.commands else lookahead.played_commands(episodes)
    won, met, agreed = lookahead_wins(critic, commands, seeds)
    print(
        f"the critic's lookahead over {', '.join(commands)} (fit on {len(episodes)} "
        f"episodes): {won} of {len(seeds)} won; the reactive agent "
        f"{wins(seeds, lambda _, observation: em_anomaly(observation))}"
    )
    shares = ", ".join(
        f"{r} {agreed[r]} of {met[r]}" for r in ("mark", "climb", "straight", "turn")
    )
    print(f"  its command the reactive agent's, by the reactive agent's reason: {shares}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
