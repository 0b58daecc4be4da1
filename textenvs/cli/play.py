"""`textenvs play ENV`: a person plays in the terminal."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from textenvs.agents.human import HELP, HumanAgent
from textenvs.cli.command import Command
from textenvs.cli.common import (
    checked_env_options,
    env_argument,
    env_option_argument,
    print_outcome,
    seed_argument,
    seed_from_args,
)
from textenvs.cli.web import add_web_arguments, play_in_browser
from textenvs.core import registry
from textenvs.episodes.loop import run_episode
from textenvs.episodes.record import Turn


def _arguments(p: argparse.ArgumentParser) -> None:
    env_argument(p)
    seed_argument(p)
    env_option_argument(p)
    add_web_arguments(p)


def _show_reward(turn: Turn) -> None:
    if turn.reward:
        print(f"[reward {turn.reward:+g}]")


def _play(args: argparse.Namespace) -> int:
    if args.web:
        return play_in_browser(args)
    scenario = registry.get(args.env)
    seed = seed_from_args(args.seed)
    env = registry.make(scenario.name)
    options = checked_env_options(args, env, seed)
    print(f"{scenario.title} ({scenario.name}), seed {seed}\n")
    print(env.rules)
    print(HELP)
    try:
        result = asyncio.run(
            run_episode(env, HumanAgent(), seed, options=options, on_turn=_show_reward)
        )
    except KeyboardInterrupt:
        # The thread reading the next command is still blocked in input(): a normal exit
        # would wait for Enter (or abort while it holds stdin), so leave at once.
        print(flush=True)  # ends the prompt line the terminal's ^C was echoed on
        print("textenvs play: interrupted", file=sys.stderr, flush=True)
        os._exit(130)
    if result.outcome == "quit":
        print(f"Stopped after {result.steps} steps (return {result.total_reward:g}).")
        return 0
    print()
    print(result.final_observation)
    print_outcome(result)
    return 0


COMMAND = Command(
    "play",
    help="play a scenario yourself in the terminal",
    description="Play ENV in the terminal: read the observation, type a command. "
    "'help' shows the rules and commands, 'quit' stops. A command that cannot be "
    "read is explained and does not cost a step.",
    handler=_play,
    arguments=_arguments,
)
