"""`textenvs eval --env ENV|all --agent AGENT --seeds 0-99 --out DIR`: a batch eval."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

import textenvs
from textenvs.agents.llm.config import LLMConfig, strip_credentials
from textenvs.cli.common import (
    EXIT_AGENT_ERRORS,
    EXIT_STOPPED,
    EXIT_USAGE,
    add_agent_options,
    agent_factory,
    agent_from_args,
    env_option_argument,
    env_options_from_args,
    env_url_argument,
    non_negative,
    preflight,
    scrubber_for,
)
from textenvs.cli.tables import stdout_console
from textenvs.core.redact import redact_argv, redact_url, scrub_logs
from textenvs.evals import failures, runner, store
from textenvs.evals.episode import AGENT_ERROR
from textenvs.evals.failures import FailFast, top_error_classes
from textenvs.evals.metrics import Record
from textenvs.evals.report import default_out
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
        "backend",
        "ray_address",
        "ray_actors",
    }
)
SECRET_WORDS = ("key", "secret", "token", "password", "auth")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="run an agent on scenarios across many seeds and score it",
        description="Run ENV x SEEDS episodes with an agent; results go to DIR "
        "(config.json, episodes.jsonl, trajectories/, summary.json). Crash-safe: "
        "rerun with --resume to finish an interrupted run. Exit status: 0 done, 1 not "
        "every episode recorded, 2 bad options or an unusable endpoint or DIR, 3 done but "
        "some episodes ended in agent errors, 4 stopped early by the fail-fast checks.",
    )
    p.add_argument("--env", required=True, help="scenario name, a comma list, or 'all'")
    env_option_argument(p)
    add_agent_options(p)
    p.add_argument("--seeds", default="0-99", help="seeds: N, N-M or a comma list (0-99)")
    p.add_argument(
        "--episodes-per-seed",
        type=_positive,
        default=1,
        metavar="K",
        help="episodes per (env, seed) (1); the same seed gives the same world, so K > 1 "
        "only measures the agent's own variance",
    )
    p.add_argument(
        "--trials",
        type=_positive,
        default=1,
        metavar="K",
        help="trial mode: one agent plays K consecutive episodes (the seeds in groups of K: "
        "0-4, 5-9, ... for K=5) in one continuing conversation, seeing each episode's end; "
        "the report draws learning curves. The seed count must be a multiple of K (1)",
    )
    p.add_argument(
        "--concurrency",
        type=_positive,
        default=None,
        metavar="C",
        help="episodes (with --trials, trial groups) in flight (8; with --model local, 1: "
        "one embedded-model server per episode in flight, sharing --local-threads)",
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
        type=_positive,
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
        type=_positive,
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
    p.set_defaults(handler=_eval)


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {value:g}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
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
    console = Console(stderr=True)
    local_model = _plan_local_servers(args)
    try:
        plan = runner.EvalPlan(
            envs=runner.resolve_envs(args.env),
            seeds=runner.parse_seeds(args.seeds),
            episodes_per_seed=args.episodes_per_seed,
            max_invalid=args.max_invalid,
            concurrency=args.concurrency,
            env_options=env_options_from_args(args),
            trials=args.trials,
        )
        check_trials(len(plan.seeds), plan.trials)
        if plan.env_options and len(plan.envs) > 1:
            raise ValueError("--env-option needs a single --env (options differ by scenario)")
        if plan.env_options:  # a bad key or value fails here, not in every episode
            textenvs.make(plan.envs[0]).reset(seed=0, options=plan.env_options)
        if args.retry_errors and not args.resume:
            raise ValueError("--retry-errors continues a run: add --resume")
        if args.backend != "ray" and (args.ray_address or args.ray_actors):
            raise ValueError("--ray-address and --ray-actors go with --backend ray")
        if args.backend == "ray" and args.env_url:
            raise ValueError("--backend ray plays local envs: drop --env-url")
    except ValueError as exc:
        _say(console, f"textenvs eval: error: {exc}")
        return EXIT_USAGE
    prices = None
    if args.price_per_1k_prompt is not None or args.price_per_1k_completion is not None:
        prices = {
            "prompt_per_1k": args.price_per_1k_prompt or 0.0,
            "completion_per_1k": args.price_per_1k_completion or 0.0,
        }
    probe = agent_from_args(args)  # fails early on bad agent options
    asyncio.run(probe.aclose())
    scrub = scrubber_for(args, probe)
    scrub_logs(scrub)  # retry warnings and other log lines too
    config = runner.build_config(
        plan,
        probe,
        agent_options=agent_options(args),
        prices=prices,
        seeds_spec=args.seeds,
        command=redact_argv(runner.default_command()),
    )
    make_env = None
    if args.env_url:
        from textenvs.service.client import remote_env_factory, service_error

        make_env = remote_env_factory(args.env_url)
        try:  # fails early when the service is unreachable or lacks a scenario
            config["envs"] = {name: make_env.client.env_info(name)["version"] for name in plan.envs}
        except Exception as exc:
            message = service_error(exc, redact_url(args.env_url))
            if message is None:
                raise
            _say(console, f"textenvs eval: error: {scrub.text(message)}")
            return EXIT_USAGE
        config["env_url"] = strip_credentials(args.env_url)
    factory = agent_factory(args)
    backend = None
    if args.backend == "ray":
        backend = _ray_backend(args, plan, factory, probe, console)
        if backend is None:
            return EXIT_USAGE
    else:
        learned = preflight(args, probe, scrub, plan.envs)
        if learned:  # the server's context window, its json-mode form
            factory = agent_factory(args, learned)
            config["agent"] = factory().config()
    if local_model:
        from textenvs.agents.llm import local

        threads = local.pool.threads_each(probe.cfg.local_threads)
        _say(console, f"note: the embedded model: {plan.concurrency} server(s) (one per "
             f"episode in flight), {threads} thread(s) each")  # fmt: skip
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("success {task.fields[ok]}/{task.fields[n]}"),
        TextColumn("[red]{task.fields[errors]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    state = {"task": None, "ok": 0, "n": 0, "errors": 0}

    def on_start(total: int, done: int) -> None:
        state["task"] = progress.add_task(
            f"{probe.name} on {len(plan.envs)} env(s)", total=total, completed=done, ok=0, n=0,
            errors="",
        )  # fmt: skip
        if done:
            console.print(f"resuming: {done} of {total} episodes already recorded")

    def on_episode(record: Record) -> None:
        state["n"] += 1
        state["ok"] += int(record["success"])
        state["errors"] += int(record["outcome"] == AGENT_ERROR)
        errors = f"{state['errors']} agent errors" if state["errors"] else ""
        progress.update(
            state["task"], advance=1, ok=state["ok"], n=state["n"], errors=errors
        )  # fmt: skip

    fail_fast = FailFast(args.fail_fast, args.max_error_rate)
    try:
        with progress:
            summary = asyncio.run(
                runner.run_eval(
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
    except RunDirError as exc:
        _say(console, f"textenvs eval: error: {exc}")
        return EXIT_USAGE
    except KeyboardInterrupt:
        console.print(
            f"interrupted; finished episodes are saved. Resume with --resume --out {args.out}"
        )
        return 130
    finally:
        if make_env is not None:
            make_env.client.close()
        if backend is not None:
            backend.stop()
    stdout_console().print(results_table(summary, str(args.out)))
    return _verdict(args, summary, console)


def _plan_local_servers(args: argparse.Namespace) -> bool:
    """Settle --concurrency (8; 1 for the embedded model) and, for the embedded model,
    plan one server per episode in flight. True when the agent is the embedded model."""
    local_model = False
    if args.agent == "llm" and args.backend == "local":
        from textenvs.agents.llm.options import llm_config_from_args

        local_model = llm_config_from_args(args).is_local
    if args.concurrency is None:
        args.concurrency = 1 if local_model else 8
    if local_model:
        from textenvs.agents.llm import local

        local.pool.plan(args.concurrency)
    return local_model


def _ray_backend(
    args: argparse.Namespace,
    plan: runner.EvalPlan,
    factory: runner.AgentFactory,
    probe: Any,
    console: Console,
) -> Any:
    """The started Ray backend, its endpoint checked from every actor; None after telling
    why it cannot be used."""
    try:
        from textenvs.evals.ray_backend import RayBackend, RayBackendError
    except ImportError:
        _say(console, "textenvs eval: error: --backend ray needs Ray: pip install 'textenvs[ray]'")
        return None
    from textenvs.agents.llm.preflight import PreflightError

    config = getattr(probe, "cfg", None)
    names = [config.api_key_env, "OPENAI_BASE_URL"] if isinstance(config, LLMConfig) else []
    backend = RayBackend(
        plan,
        factory,
        address=args.ray_address,
        actors=args.ray_actors,
        # the actors' processes were not started from this shell: send what the agent reads
        env_vars={name: os.environ[name] for name in names if os.environ.get(name)},
        on_note=lambda text: console.print(f"note: {text}", markup=False),
    )
    try:
        backend.start()
        if not args.no_preflight:
            backend.preflight()
    except (RayBackendError, PreflightError) as exc:
        backend.stop()
        what = "preflight: " if isinstance(exc, PreflightError) else ""
        _say(console, f"textenvs eval: error: {what}{scrubber_for(args, probe).text(str(exc))}")
        return None
    return backend


def _say(console: Console, text: str) -> None:
    """One plain line on stderr (no rich markup, never wrapped)."""
    console.print(text, markup=False, soft_wrap=True)


def _verdict(args: argparse.Namespace, summary: dict[str, Any], console: Console) -> int:
    """The closing lines (why it stopped, the top agent-error classes) and the exit code."""
    errors = top_error_classes(store.read_episodes(args.out))
    if errors:
        total = summary["by_env"]["all"]["agent_errors"]
        _say(console, f"{total} episode(s) ended in agent errors; most frequent:")
        for name, count in errors:
            _say(console, f"  {count:5d}  {name}")
    retry = f"textenvs eval ... --out {args.out} --resume --retry-errors"
    if summary["stopped"]:
        _say(console, f"stopped early: {summary['stopped']}")
        _say(console, f"fix the cause, then finish the run with: {retry}")
        return EXIT_STOPPED
    if errors:
        _say(console, f"to play them again: {retry}")
    report = f"write the report with: textenvs report {args.out} (into {default_out([args.out])}/)"
    print(f"results in {args.out}/ (summary.json, episodes.jsonl, trajectories/); {report}")
    if not summary["complete"]:
        if args.trials > 1:
            _say(console, f"some trial groups did not finish: textenvs eval ... --out {args.out} "
                 "--resume plays each of them again from its first trial")  # fmt: skip
        return 1
    return EXIT_AGENT_ERRORS if errors else 0


def na(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def results_table(summary: dict[str, Any], title: str) -> Table:
    """Per-env results; "score" is the normalised score against the scenario's reference
    band (the "all" row averages those, never returns of different scales)."""
    table = Table(title=f"{summary['agent'].get('name')} - {title}", title_justify="left")
    for column in ("env", "episodes", "success", "95% CI", "return", "steps", "invalid", "score"):
        left = column == "env"
        table.add_column(column, justify="left" if left else "right", no_wrap=left)
    table.add_column("errors", justify="right")
    tokens = any(s["tokens_per_episode"] for s in summary["by_env"].values())
    # A cost needs tokens: prices given to an agent without them (scripted) add nothing.
    priced = tokens and any(s["cost"] is not None for s in summary["by_env"].values())
    if tokens:
        table.add_column("tokens/ep", justify="right")
    cached = any(s.get("cacheable_share") is not None for s in summary["by_env"].values())
    if cached:  # llm prompts: share repeating the previous request; tokens the server reused
        table.add_column("cacheable", justify="right")
        table.add_column("cached/ep", justify="right")
    if priced:
        table.add_column("$/ep", justify="right")
    envs = list(summary["by_env"])
    for env, s in summary["by_env"].items():
        lo, hi = s["success_ci95"] or (None, None)
        row = [
            env,
            str(s["episodes"]),
            f"{s['successes']}/{s['scored_episodes']} {na(s['success_rate'], '.0%')}",
            f"{na(lo, '.0%')}-{na(hi, '.0%')}" if lo is not None else "n/a",
            na(s["mean_return"], ".2f")
            + (f"±{s['return_stderr']:.2f}" if s["return_stderr"] is not None else ""),
            na(s["mean_steps"], ".1f"),
            na(s["invalid_action_rate"], ".1%"),
            na(s.get("normalised"), ".2f"),
            f"[red]{s['agent_errors']}[/]" if s["agent_errors"] else "0",
        ]
        if tokens:
            row.append(f"{s['tokens_per_episode']:.0f}")
        if cached:
            share = s.get("cacheable_share")
            row.append("-" if share is None else f"{share:.0%}")
            row.append(f"{s['tokens'].get('cached', 0) / max(1, s['episodes']):.0f}")
        if priced:
            row.append(f"{s['cost_per_episode']:.4f}")
        table.add_row(*row, end_section=len(envs) > 1 and env == envs[-2])
    return table
