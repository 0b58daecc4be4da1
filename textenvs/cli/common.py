"""Options and output shared by the commands that play episodes (`run`, `play`, `eval`)."""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from typing import Any

from textenvs.agents import AGENTS, Agent, make_agent
from textenvs.agents.llm.options import add_llm_options, llm_config_from_args
from textenvs.evals.episode import EpisodeResult, Turn


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent",
        required=True,
        choices=[a for a in AGENTS if a != "human"],
        help="who plays: 'random' (uniform random commands), 'scripted' (the scenario's "
        "heuristic, reads only the observation), 'llm' (an OpenAI-compatible model)",
    )
    add_llm_options(parser)


def agent_from_args(args: argparse.Namespace) -> Agent:
    if args.agent == "llm":
        return make_agent("llm", config=llm_config_from_args(args))
    return make_agent(args.agent)


def seed_from_args(seed: int | None) -> int:
    """The given seed, or a fresh one (printed, so the episode can be replayed)."""
    return seed if seed is not None else secrets.randbelow(2**31)


def print_turn(turn: Turn) -> None:
    """The observation the agent saw, then its command (and any reward it earned)."""
    print()
    print(turn.observation)
    reward = f"   [reward {turn.reward:+g}]" if turn.reward else ""
    print(f"\n> {turn.command}{reward}", flush=True)


def print_outcome(result: EpisodeResult) -> None:
    print(
        f"\nOutcome: {result.outcome} | return {result.total_reward:g} | "
        f"steps {result.steps} | invalid commands {result.invalid_actions}"
        + (f" | error: {result.error}" if result.error else "")
    )


def env_url_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env-url",
        metavar="URL",
        default=None,
        help="play on a textenvs service (e.g. http://host:8000) instead of locally; "
        "a bearer token is read from $TEXTENVS_TOKEN",
    )


def env_option_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env-option",
        dest="env_options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option for the scenario's reset, e.g. 'level=2' for magnetic-field "
        "(repeatable; values are read as JSON when they parse, else as text)",
    )


def env_options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """`--env-option KEY=VALUE` pairs as reset options ('2' -> 2, 'true' -> True)."""
    options: dict[str, Any] = {}
    for pair in args.env_options:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--env-option takes KEY=VALUE, got {pair!r}")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


def checked_env_options(args: argparse.Namespace, env: Any, seed: int) -> dict[str, Any] | None:
    """The reset options, after trying them on `env`: a bad key or value is a one-line
    error (exit 2), not a traceback."""
    try:
        options = env_options_from_args(args)
        if options:
            env.reset(seed=seed, options=options)
    except ValueError as exc:
        print(f"textenvs {args.command}: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return options or None


def seed_argument(parser: argparse.ArgumentParser, **kwargs: Any) -> None:
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="episode seed (same seed, same episode); random and printed when omitted",
        **kwargs,
    )
