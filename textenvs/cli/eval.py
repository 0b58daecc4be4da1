"""`textenvs eval --env ENV|all --agent AGENT --seeds 0-99 --out DIR`: a batch eval."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from rich.console import Console

from textenvs.agents import agent_problem
from textenvs.agents.llm.config import strip_credentials
from textenvs.agents.opening import opening_seeds, planned_openings, with_openings
from textenvs.cli import checkpoint, eval_options
from textenvs.cli.command import Command
from textenvs.cli.common import (
    EXIT_USAGE,
    agent_factory,
    env_options_from_args,
    preflight,
    scrubber_for,
)
from textenvs.cli.eval_backends import plan_local_servers, session_label, start_ray_backend
from textenvs.cli.eval_output import (
    EvalProgress,
    closing_verdict,
    continue_command,
    results_table,
    say,
)
from textenvs.cli.tables import stdout_console
from textenvs.core.heartbeat import Heartbeat
from textenvs.core.redact import Scrubber, redact_argv, redact_url, scrub_logs
from textenvs.episodes.specs import check_reset_options, parse_seeds, resolve_envs
from textenvs.evals.failures import FailFast
from textenvs.evals.plan import EvalPlan, build_config, default_command
from textenvs.evals.runner import run_eval
from textenvs.evals.store import RunDirError
from textenvs.evals.trials import check_trials

if TYPE_CHECKING:
    from textenvs.service.client import RemoteEnvFactory

# Our own options; every other attribute of the parsed args is an agent option.
EVAL_OPTIONS = frozenset(
    {
        "command",
        "handler",
        "env",
        "seeds",
        "episodes_per_seed",
        "concurrency",
        "out",
        "resume",
        "retry_errors",
        "fail_fast",
        "max_error_rate",
        "no_preflight",
        "max_invalid",
        "price_per_1k_prompt",
        "price_per_1k_completion",
        "env_url",
        "trials",
        "openings",
        "backend",
        "ray_address",
        "ray_actors",
        "served_on_loopback",  # the port of this run's own server (checkpoint.served)
    }
)
SECRET_WORDS = ("key", "secret", "token", "password", "auth")


def agent_options(args: argparse.Namespace) -> dict[str, Any]:
    """The agent's CLI options for `config.json`: JSON-able values, secrets dropped."""
    out: dict[str, Any] = {}
    for name, value in sorted(vars(args).items()):
        if name in EVAL_OPTIONS or any(word in name.lower() for word in SECRET_WORDS):
            continue
        if value is None or isinstance(value, str | int | float | bool):
            out[name] = value
    return out


def _eval(args: argparse.Namespace) -> int:
    if args.seeds is None:
        args.seeds = opening_seeds(args.openings) if args.openings else "0-99"
    local_model = plan_local_servers(args)
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError:
        seeds = []  # told below, with the other option errors
    with checkpoint.served(args, seeds, slots=args.concurrency):
        return _eval_planned(args, local_model)


def checked_plan(args: argparse.Namespace) -> tuple[EvalPlan, Any]:
    """The run's plan and openings from its options; ValueError says what is wrong."""
    plan = EvalPlan(
        envs=resolve_envs(args.env),
        seeds=parse_seeds(args.seeds),
        episodes_per_seed=args.episodes_per_seed,
        max_invalid=args.max_invalid,
        concurrency=args.concurrency,
        env_options=env_options_from_args(args),
        trials=args.trials,
    )
    check_trials(len(plan.seeds), plan.trials)
    openings = planned_openings(args.openings, plan.envs, plan.seeds, plan.trials)
    check_reset_options(plan.envs, plan.env_options)
    problem = next(filter(None, (agent_problem(args.agent, env) for env in plan.envs)), None)
    if problem:
        raise ValueError(problem)
    if args.retry_errors and not args.resume:
        raise ValueError("--retry-errors continues a run; add --resume")
    if args.backend != "ray" and (args.ray_address or args.ray_actors):
        raise ValueError("--ray-address and --ray-actors go with --backend ray")
    if args.backend == "ray" and args.env_url:
        raise ValueError("--backend ray plays local envs: drop --env-url")
    return plan, openings


def remote_envs(
    args: argparse.Namespace,
    plan: EvalPlan,
    config: dict[str, Any],
    scrub: Scrubber,
    console: Console,
) -> RemoteEnvFactory | None:
    """The service's envs at `--env-url`, checked before any episode (reachable, recent
    enough, holding each scenario at its version), with `config` told where they are;
    None, said in one line, when they are unusable."""
    from textenvs.service.client import remote_env_factory, service_error
    from textenvs.service.versions import LABELS_API

    label: str | None = session_label(args)
    make_env = remote_env_factory(args.env_url, label=label)
    try:  # fails early: the service unreachable, too old, lacking a scenario, or at
        # another version
        if make_env.client.api() < LABELS_API:  # a server from before session labels
            say(console, "note: the service's textenvs is older than this one (no session "
                "labels): a --resume cannot close what a killed run left open; upgrade "
                "textenvs on the server for that")  # fmt: skip
            make_env.close()
            label, make_env = None, remote_env_factory(args.env_url)
        envs = {name: make_env.client.checked_env_info(name) for name in plan.envs}
        config["envs"] = {name: meta["version"] for name, meta in envs.items()}
        if args.resume and label:  # what a killed run left open holds session places
            left = make_env.client.delete_labelled(label)
            if left:
                say(console, f"note: closed {left} session(s) the interrupted run left open")
    except Exception as exc:
        message = service_error(exc, redact_url(args.env_url))
        if message is None:
            raise
        say(console, f"textenvs eval: error: {scrub.text(message)}")
        return None
    config["env_url"] = strip_credentials(args.env_url)
    config["session_label"] = label
    return make_env


def _eval_planned(args: argparse.Namespace, local_model: bool) -> int:
    console = Console(stderr=True)
    try:
        plan, openings = checked_plan(args)
    except ValueError as exc:
        say(console, f"textenvs eval: error: {exc}")
        return EXIT_USAGE
    prices = None
    if args.price_per_1k_prompt is not None or args.price_per_1k_completion is not None:
        prices = {
            "prompt_per_1k": args.price_per_1k_prompt or 0.0,
            "completion_per_1k": args.price_per_1k_completion or 0.0,
        }
    factory = with_openings(agent_factory(args), openings, args.openings)
    probe = factory()  # fails early on bad agent options
    asyncio.run(probe.aclose())
    scrub = scrubber_for(args, probe)
    scrub_logs(scrub)  # retry warnings and other log lines too
    config = build_config(
        plan,
        probe,
        agent_options=agent_options(args),
        prices=prices,
        seeds_spec=args.seeds,
        command=redact_argv(default_command()),
    )
    make_env = None
    if args.env_url:
        make_env = remote_envs(args, plan, config, scrub, console)
        if make_env is None:
            return EXIT_USAGE
    backend = None
    if args.backend == "ray":
        backend = start_ray_backend(args, plan, factory, probe, console)
        if backend is None:
            return EXIT_USAGE
    else:
        learned = preflight(args, probe, scrub, plan.envs)
        if learned:  # the server's context window, its json-mode form
            factory = with_openings(agent_factory(args, learned), openings, args.openings)
            config["agent"] = factory().config()
    checkpoint.record_as_served(args, config)
    if local_model:
        from textenvs.agents.llm import local

        threads = local.pool.threads_each(probe.cfg.local_threads)
        say(console, f"note: the embedded model: {plan.concurrency} server(s) (one per "
            f"episode in flight), {threads} thread(s) each")  # fmt: skip
    progress = EvalProgress(console, f"{probe.name} on {len(plan.envs)} env(s)", plan.concurrency)
    fail_fast = FailFast(args.fail_fast, args.max_error_rate)
    try:
        try:
            with Heartbeat(console, progress.still_playing):
                summary = asyncio.run(
                    run_eval(
                        plan,
                        args.out,
                        factory,
                        config,
                        resume=args.resume,
                        retry_errors=args.retry_errors,
                        fail_fast=fail_fast,
                        scrub=scrub,
                        on_start=progress.on_start,
                        on_episode=progress.on_episode,
                        on_note=lambda text: console.print(f"note: {text}", markup=False),
                        make_env=make_env,
                        backend=backend,
                    )
                )
        finally:
            progress.stop()  # before any closing line
    except RunDirError as exc:
        say(console, f"textenvs eval: error: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        say(console, "textenvs eval: interrupted; finished episodes are saved; resume with: "
            f"{continue_command(config['command'], '--resume')}")  # fmt: skip
        # an exit, not a return: a served --model DIR then stops without waiting for the
        # replies in flight (checkpoint.served)
        raise SystemExit(130) from None
    finally:
        if make_env is not None:
            make_env.close()
        if backend is not None:
            backend.stop()
    stdout_console().print(results_table(summary, str(args.out)))
    return closing_verdict(args, summary, console, config["command"])


COMMAND = Command(
    "eval",
    help="run an agent on scenarios across many seeds and score it",
    description="Run ENV x SEEDS episodes with an agent; results go to DIR "
    "(config.json, episodes.jsonl, trajectories/, summary.json). Crash-safe: "
    "rerun with --resume to finish an interrupted run. Exit status: 0 done, 1 not "
    "every episode recorded, 2 bad options or an unusable endpoint or DIR, 3 done but "
    "some episodes ended in agent errors, 4 stopped early by the fail-fast checks.",
    handler=_eval,
    arguments=eval_options.arguments,
)
