"""`textenvs list` and `textenvs rules ENV`."""

from __future__ import annotations

import argparse

from rich.table import Table

from textenvs.cli.command import Command
from textenvs.cli.common import (
    checked_env_options,
    env_argument,
    env_option_argument,
    positive,
)
from textenvs.cli.tables import stdout_console
from textenvs.core import registry
from textenvs.prompts import Mode, prompt_name, rules_text


def _rules_arguments(p: argparse.ArgumentParser) -> None:
    env_argument(p)
    p.add_argument(
        "--trials",
        type=positive,
        default=1,
        metavar="K",
        help="the rules of trial mode (`eval --trials K`, K > 1): episodes follow one "
        "another in one conversation, each after the first opening with how the last "
        "ended (1)",
    )
    env_option_argument(p)


def _list(args: argparse.Namespace) -> int:
    table = Table(title="textenvs scenarios")
    for column in ("name", "gymnasium id", "title", "steps"):
        table.add_column(column)
    for scenario in registry.SCENARIOS:
        env_class = scenario.load()
        table.add_row(scenario.name, scenario.env_id, scenario.title, str(env_class.max_steps))
    stdout_console().print(table)
    return 0


def _rules(args: argparse.Namespace) -> int:
    name = registry.get(args.env).name
    options = checked_env_options(args, registry.make(name), seed=0)
    print(rules_text(prompt_name(name, options), Mode(continued=args.trials > 1)), end="")
    return 0


LIST = Command("list", help="list the scenarios", description="List the scenarios.", handler=_list)
RULES = Command(
    "rules",
    help="print a scenario's rules",
    description="Print the rules text a player (person or LLM) is given for ENV: by "
    "default for one episode, as `textenvs play`, a single-episode eval and the service "
    "give it; with --trials K as trial mode gives it.",
    handler=_rules,
    arguments=_rules_arguments,
)
