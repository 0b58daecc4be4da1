"""`textenvs list` and `textenvs rules ENV`."""

from __future__ import annotations

import argparse

from rich.table import Table

from textenvs.cli.tables import stdout_console
from textenvs.core import registry
from textenvs.prompts import rules_text


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list the scenarios", description="List the scenarios.")
    p.set_defaults(handler=_list)
    p = sub.add_parser(
        "rules",
        help="print a scenario's rules",
        description="Print the rules text a player (person or LLM) is given for ENV.",
    )
    p.add_argument("env", metavar="ENV", help="scenario name, e.g. treasure-hunt")
    p.set_defaults(handler=_rules)


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
    print(rules_text(registry.get(args.env).name), end="")
    return 0
