"""A subcommand as its module declares it: the texts of its parser, its options and what
runs it. `textenvs.cli.build_parser` adds each one, so the argparse wiring is written once."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    #: the word after `textenvs`
    name: str
    #: its line in `textenvs --help`
    help: str
    #: its `--help` text above the options
    description: str
    #: runs it: the parsed options -> the exit status
    handler: Callable[[argparse.Namespace], int]
    #: adds its options to its parser (None: it takes none)
    arguments: Callable[[argparse.ArgumentParser], None] | None = None
    #: its `--help` text below the options
    epilog: str | None = None
    #: how its `--help` is laid out
    formatter_class: type[argparse.HelpFormatter] = argparse.HelpFormatter

    def add_to(self, sub: argparse._SubParsersAction) -> None:
        parser = sub.add_parser(
            self.name,
            help=self.help,
            description=self.description,
            epilog=self.epilog,
            formatter_class=self.formatter_class,
        )
        if self.arguments is not None:
            self.arguments(parser)
        parser.set_defaults(handler=self.handler)
