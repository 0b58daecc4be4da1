"""The `textenvs` command. Each subcommand lives in its own module with a `register`.

Every error is one line on stderr, `textenvs COMMAND: error: what was wrong; what to do`,
with a non-zero exit status (docs/architecture.md, "Error lines")."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, NoReturn

from textenvs import __version__
from textenvs.core.registry import UnknownEnvError

# Subcommand modules, in the order `--help` lists them.
COMMANDS = (
    "textenvs.cli.info",
    "textenvs.cli.play",
    "textenvs.cli.run",
    "textenvs.cli.eval",
    "textenvs.cli.report",
    "textenvs.cli.export",
    "textenvs.cli.train",
    "textenvs.cli.save_model",
    "textenvs.cli.serve",
)


class OneLineParser(argparse.ArgumentParser):
    """argparse, with its errors as one line (no usage block above them) that names the
    command and where its options are described. Subcommands' parsers are of this class
    too (argparse makes them of their parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}  # set on the top-level one

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}; see '{self.prog} --help'", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> OneLineParser:
    parser = OneLineParser(
        prog="textenvs",
        description="Text environments for evaluating LLMs as agents.",
        epilog="Run 'textenvs COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"textenvs {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    parser.commands = dict(sub.choices)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # told by the command's own parser, which lists the options it takes
        command = parser.commands.get(args.command, parser)
        command.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return int(args.handler(args) or 0)
    except UnknownEnvError as exc:
        print(f"textenvs {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(flush=True)  # ends the line the terminal's ^C was echoed on
        print(f"textenvs {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
