"""What `textenvs eval` prints: its progress while episodes are played, and when a run
ends the results table, the agent errors that happened most, and the exit status that
goes with them."""

from __future__ import annotations

import argparse
import shlex
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from textenvs.cli.common import EXIT_AGENT_ERRORS, EXIT_STOPPED
from textenvs.core.progress import progress_bar
from textenvs.episodes.protocol import AGENT_ERROR
from textenvs.evals import store
from textenvs.evals.failures import top_error_classes
from textenvs.evals.metrics import Record
from textenvs.evals.report import default_out


def say(console: Console, text: str) -> None:
    """One plain line on stderr (no rich markup, never wrapped)."""
    console.print(text, markup=False, soft_wrap=True)


def continue_command(command: list[str], *flags: str) -> str:
    """The run's own command line with `flags` added (those it lacks): a hint that can be
    typed as shown (`--resume` alone misses the required --env and --agent)."""
    return shlex.join([*command, *(flag for flag in flags if flag not in command)])


def closing_verdict(
    args: argparse.Namespace, summary: dict[str, Any], console: Console, command: list[str]
) -> int:
    """The closing lines (why it stopped, the top agent-error classes) and the exit code;
    `command` is the run's command line, for the hints that continue it."""
    errors = top_error_classes(store.read_episodes(args.out))
    if errors:
        total = summary["by_env"]["all"]["agent_errors"]
        say(console, f"{total} episode(s) ended in agent errors; most frequent:")
        for name, count in errors:
            say(console, f"  {count:5d}  {name}")
    retry = continue_command(command, "--resume", "--retry-errors")
    if summary["stopped"]:
        say(console, f"stopped early: {summary['stopped']}")
        say(console, f"fix the cause, then finish the run with: {retry}")
        return EXIT_STOPPED
    if errors:
        say(console, f"to play them again: {retry}")
    report = f"write the report with: textenvs report {args.out} (into {default_out([args.out])}/)"
    print(f"results in {args.out}/ (summary.json, episodes.jsonl, trajectories/); {report}")
    if not summary["complete"]:
        if args.trials > 1:
            say(console, "some trial groups did not finish: "
                f"{continue_command(command, '--resume')} plays each of them again from its "
                "first trial")  # fmt: skip
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
            env if s.get("level") is None else f"{env} (level {s['level']})",
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


class EvalProgress:
    """The progress bar of a run's episodes (successes and agent errors so far) and the
    heartbeat's line; the bar starts once the run folder is ready, so that an error
    before it is one line."""

    def __init__(self, console: Console, description: str, concurrency: int) -> None:
        self.console, self.description, self.concurrency = console, description, concurrency
        self.bar = progress_bar(
            console,
            "[bold]{task.description}",
            "success {task.fields[ok]}/{task.fields[n]}",
            "[red]{task.fields[errors]}",
        )
        self.task: Any = None
        self.ok = self.n = self.errors = self.total = self.done = 0
        self.started = time.monotonic()

    def still_playing(self) -> str:
        return (
            f"{self.done + self.n} of {self.total} episodes done (success {self.ok}/{self.n} "
            f"this run), {(time.monotonic() - self.started) / 60:.1f} min"
        )

    def on_start(self, total: int, done: int) -> None:
        self.total, self.done = total, done
        self.bar.start()
        self.task = self.bar.add_task(
            self.description, total=total, completed=done, ok=0, n=0, errors=""
        )
        if done:
            self.console.print(f"resuming: {done} of {total} episodes already recorded")

    def on_episode(self, record: Record) -> None:
        self.n += 1
        self.ok += int(record["success"])
        self.errors += int(record["outcome"] == AGENT_ERROR)
        if self.n == 1:
            self.unreadable_pace(record)
        errors = f"{self.errors} agent errors" if self.errors else ""
        self.bar.update(self.task, advance=1, ok=self.ok, n=self.n, errors=errors)

    def unreadable_pace(self, record: Record) -> None:
        """Say so when every reply of the first episode was unreadable: such a model
        keeps that pace (each reply cut at the limit and asked again), hours a run."""
        steps = record["steps"]
        if not steps or record["invalid_actions"] < steps:
            return
        left = self.total - self.done - 1
        hours = record["wall_s"] * left / self.concurrency / 3600
        say(
            self.console,
            f"note: every reply of the first episode was unreadable ({steps} of {steps}, "
            f"{record['wall_s'] / 60:.1f} min); at that pace the {left} episodes left take "
            f"about {hours:.1f} h: Ctrl-C keeps what is done; --max-tokens 8 --reasks 0 cut "
            "each reply's cost, --max-invalid N ends such episodes early",
        )

    def stop(self) -> None:
        """Stop the bar if it started (stopping prints a line break)."""
        if self.task is not None:
            self.bar.stop()
