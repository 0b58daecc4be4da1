"""`textenvs run ENV --agent AGENT`: one episode, transcript printed as it plays."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

from textenvs.agents import agent_problem
from textenvs.cli import checkpoint
from textenvs.cli.command import Command
from textenvs.cli.common import (
    EXIT_AGENT_ERRORS,
    add_agent_options,
    agent_from_args,
    checked_env_options,
    env_argument,
    env_option_argument,
    env_url_argument,
    fail,
    positive,
    preflight,
    print_outcome,
    print_turn,
    scrubber_for,
    seed_argument,
    seed_from_args,
)
from textenvs.core import registry
from textenvs.core.redact import redact_url, scrub_logs
from textenvs.episodes.protocol import AGENT_ERROR
from textenvs.episodes.record import EpisodeResult
from textenvs.evals.trials import play_group


def _arguments(p: argparse.ArgumentParser) -> None:
    env_argument(p)
    seed_argument(p)
    p.add_argument(
        "--trials",
        type=positive,
        default=1,
        metavar="K",
        help="trial mode: the agent plays K consecutive episodes (seeds N, N+1, ..., "
        "N+K-1) in one continuing conversation, seeing each episode's end (1)",
    )
    env_option_argument(p)
    add_agent_options(p)
    env_url_argument(p)


def _run(args: argparse.Namespace) -> int:
    args.seed = seed_from_args(args.seed)
    seeds = list(range(args.seed, args.seed + args.trials))
    with checkpoint.served(args, seeds, slots=1):
        return _run_on_env(args)


def _run_on_env(args: argparse.Namespace) -> int:
    if args.env_url:
        try:
            return _play(args)
        except Exception as exc:
            from textenvs.service.client import service_error

            message = service_error(exc, redact_url(args.env_url))
            if message is None:
                raise
            print(f"textenvs run: error: {message}", file=sys.stderr)
            return 2
    return _play(args)


def _play(args: argparse.Namespace) -> int:
    scenario = registry.get(args.env)
    problem = agent_problem(args.agent, scenario.name)
    if problem:
        raise fail(args, problem)
    seed = seed_from_args(args.seed)
    if args.env_url:
        from textenvs.service.client import remote_env_factory

        env = remote_env_factory(args.env_url)(scenario.name)
    else:
        env = registry.make(scenario.name)
    options = checked_env_options(args, env, seed)
    agent = agent_from_args(args)
    scrub = scrubber_for(args, agent)
    scrub_logs(scrub)  # retry warnings and other log lines too
    learned = preflight(args, agent, scrub, [scenario.name])
    if learned:  # the server's context window, its json-mode form
        agent = agent_from_args(args, learned)
    seeds = list(range(seed, seed + args.trials))
    trials = f", trials 1-{args.trials} (seeds {seeds[0]}-{seeds[-1]})" * (args.trials > 1)
    print(f"{scenario.title} ({scenario.name}), seed {seed}{trials}, agent {agent.name}")

    async def play() -> list[EpisodeResult]:
        results: list[EpisodeResult] = []
        try:
            group = play_group(
                env, agent, seeds, options=options, on_turn=lambda t: print_turn(t, scrub)
            )
            async for result in group:
                results.append(result)
                print()
                print(result.final_observation)
                if args.trials > 1:
                    trial = f"{len(results)} of {args.trials} (seed {result.seed})"
                    print(f"\n=== end of trial {trial} ===")
                print_outcome(result, scrub)
        finally:
            await agent.aclose()  # e.g. the LLM agent's HTTP client
        return results

    try:
        results = asyncio.run(play())
    finally:
        with contextlib.suppress(Exception):  # a lost service: the real error is above
            env.close()
    if args.trials > 1:
        wins = "".join("+" if r.success else "-" for r in results)
        print(f"\nTrials played: {len(results)} of {args.trials}; successes by trial: {wins}")
    return EXIT_AGENT_ERRORS if any(r.outcome == AGENT_ERROR for r in results) else 0


COMMAND = Command(
    "run",
    help="play one episode with an agent and print the transcript",
    description="Play one episode of ENV with an agent and print the transcript live. "
    "Exit status: 0 played, 2 bad options or an unusable endpoint, 3 the episode ended "
    "in an agent error.",
    handler=_run,
    arguments=_arguments,
)
