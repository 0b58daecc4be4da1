"""`textenvs eval --env ENV|all --agent AGENT --seeds 0-99 --out DIR`: a batch eval."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from textenvs.agents import agent_problem
from textenvs.agents.llm.config import strip_credentials
from textenvs.agents.opening import opening_seeds, planned_openings, with_openings
from textenvs.cli import checkpoint
from textenvs.cli.command import Command
from textenvs.cli.common import (
    EXIT_USAGE,
    add_agent_options,
    agent_factory,
    env_option_argument,
    env_options_from_args,
    env_url_argument,
    non_negative,
    positive,
    preflight,
    scrubber_for,
)
from textenvs.cli.eval_backends import plan_local_servers, session_label, start_ray_backend
from textenvs.cli.eval_output import closing_verdict, continue_command, results_table, say
from textenvs.cli.tables import stdout_console
from textenvs.core.heartbeat import Heartbeat
from textenvs.core.progress import progress_bar
from textenvs.core.redact import redact_argv, redact_url, scrub_logs
from textenvs.episodes.protocol import AGENT_ERROR
from textenvs.episodes.specs import check_reset_options, parse_seeds, resolve_envs
from textenvs.evals import failures
from textenvs.evals.failures import FailFast
from textenvs.evals.metrics import Record
from textenvs.evals.plan import EvalPlan, build_config, default_command
from textenvs.evals.runner import run_eval
from textenvs.evals.store import RunDirError
from textenvs.evals.trials import check_trials

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


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", required=True, help="scenario name, a comma list, or 'all'")
    env_option_argument(p)
    add_agent_options(p)
    p.add_argument(
        "--seeds",
        default=None,
        help="seeds: N, N-M or a comma list (0-99; with --openings, the file's seeds)",
    )
    p.add_argument(
        "--episodes-per-seed",
        type=positive,
        default=1,
        metavar="K",
        help="episodes per (env, seed) (1); the same seed gives the same world, so K > 1 "
        "measures the agent's own variance (sampled with --temperature and --llm-seed, "
        "each episode with seeds of its own: the groups `train --reward-weighted` "
        "compares within)",
    )
    p.add_argument(
        "--openings",
        type=Path,
        default=None,
        metavar="FILE",
        help="start each seed's episodes from one state: a JSON file of "
        '{"SEED": [commands]}, played '
        "before the agent's first turn (each recorded as an opening turn); every seed "
        "needs one. The episodes of a seed are then branches of one state "
        "(`python -m benchmarks.field_openings` writes EM Anomaly's)",
    )
    p.add_argument(
        "--trials",
        type=positive,
        default=1,
        metavar="K",
        help="trial mode: one agent plays K consecutive episodes (the seeds in groups of K: "
        "0-4, 5-9, ... for K=5) in one continuing conversation, seeing each episode's end; "
        "the report draws learning curves. The seed count must be a multiple of K (1)",
    )
    p.add_argument(
        "--concurrency",
        type=positive,
        default=None,
        metavar="C",
        help="episodes (with --trials, trial groups) in flight (8; with --model local, 1: "
        "one embedded-model server per episode in flight, sharing --local-threads; with "
        "--model DIR served on a CPU, 1: each conversation in flight holds its cache)",
    )
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="run directory")
    p.add_argument("--resume", action="store_true", help="continue the run in DIR")
    p.add_argument(
        "--retry-errors",
        action="store_true",
        help="with --resume: play again the episodes that ended in agent errors (endpoint "
        "outages, a lost --env-url service); scored episodes are kept",
    )
    p.add_argument(
        "--fail-fast",
        type=non_negative,
        default=5,
        metavar="N",
        help="stop when the first N episodes all end in the same agent error (5; 0 = never)",
    )
    p.add_argument(
        "--max-error-rate",
        type=_share,
        default=0.5,
        metavar="R",
        help=f"stop when more than this share of the last {failures.RATE_WINDOW} episodes "
        "end in agent errors (0.5; 1 = never)",
    )
    p.add_argument(
        "--max-invalid",
        type=positive,
        default=None,
        metavar="N",
        help="end an episode after N invalid commands in a row (outcome invalid_limit)",
    )
    env_url_argument(p)
    p.add_argument(
        "--backend",
        choices=["local", "ray"],
        default="local",
        help="where episodes are played: 'local' (this process, the default) or 'ray' (actors "
        "on a Ray cluster; pip install 'textenvs[ray]'); this process writes DIR either way",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        default=None,
        help="with --backend ray: the cluster's address, e.g. 10.0.0.1:6379 (default "
        "$RAY_ADDRESS, else a cluster started on this machine, else a private local one)",
    )
    p.add_argument(
        "--ray-actors",
        type=positive,
        default=None,
        metavar="N",
        help="with --backend ray: episode actors (default one per cluster CPU, at most C); "
        "the C episodes in flight are shared among them",
    )
    p.add_argument(
        "--price-per-1k-prompt",
        type=float,
        default=None,
        metavar="USD",
        help="price of 1,000 prompt tokens, for the report's cost per episode",
    )
    p.add_argument(
        "--price-per-1k-completion",
        type=float,
        default=None,
        metavar="USD",
        help="price of 1,000 completion tokens, for the report's cost per episode",
    )


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {value:g}")
    return value


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


def _eval_planned(args: argparse.Namespace, local_model: bool) -> int:
    console = Console(stderr=True)
    try:
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
            return EXIT_USAGE
        config["env_url"] = strip_credentials(args.env_url)
        config["session_label"] = label
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
    progress = progress_bar(
        console,
        "[bold]{task.description}",
        "success {task.fields[ok]}/{task.fields[n]}",
        "[red]{task.fields[errors]}",
    )
    state = {"task": None, "ok": 0, "n": 0, "errors": 0, "total": 0, "done": 0}
    started = time.monotonic()

    def still_playing() -> str:
        done = state["done"] + state["n"]
        return (
            f"{done} of {state['total']} episodes done (success {state['ok']}/{state['n']} "
            f"this run), {(time.monotonic() - started) / 60:.1f} min"
        )

    def on_start(total: int, done: int) -> None:
        state["total"], state["done"] = total, done
        progress.start()  # once the run folder is ready: an error before it is one line
        state["task"] = progress.add_task(
            f"{probe.name} on {len(plan.envs)} env(s)", total=total, completed=done, ok=0, n=0,
            errors="",
        )  # fmt: skip
        if done:
            console.print(f"resuming: {done} of {total} episodes already recorded")

    def unreadable_pace(record: Record) -> None:
        """Say so when every reply of the first episode was unreadable: such a model
        keeps that pace (each reply cut at the limit and asked again), hours a run."""
        steps = record["steps"]
        if not steps or record["invalid_actions"] < steps:
            return
        left = state["total"] - state["done"] - 1
        hours = record["wall_s"] * left / plan.concurrency / 3600
        say(console, f"note: every reply of the first episode was unreadable ({steps} of "
            f"{steps}, {record['wall_s'] / 60:.1f} min); at that pace the {left} episodes left "
            f"take about {hours:.1f} h: Ctrl-C keeps what is done; --max-tokens 8 --reasks 0 "
            "cut each reply's cost, --max-invalid N ends such episodes early")  # fmt: skip

    def on_episode(record: Record) -> None:
        state["n"] += 1
        state["ok"] += int(record["success"])
        state["errors"] += int(record["outcome"] == AGENT_ERROR)
        if state["n"] == 1:
            unreadable_pace(record)
        errors = f"{state['errors']} agent errors" if state["errors"] else ""
        progress.update(
            state["task"], advance=1, ok=state["ok"], n=state["n"], errors=errors
        )  # fmt: skip

    fail_fast = FailFast(args.fail_fast, args.max_error_rate)
    try:
        try:
            with Heartbeat(console, still_playing):
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
                        on_start=on_start,
                        on_episode=on_episode,
                        on_note=lambda text: console.print(f"note: {text}", markup=False),
                        make_env=make_env,
                        backend=backend,
                    )
                )
        finally:
            if state["task"] is not None:  # started (stopping prints a line break)
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
    arguments=_arguments,
)
