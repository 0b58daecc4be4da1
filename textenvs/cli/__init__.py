"""The `textenvs` command. Each subcommand lives in its own module, which declares it
(`cli.command.Command`).

Every error is one line on stderr, `textenvs COMMAND: error: what was wrong; what to do`,
with a non-zero exit status (docs/architecture.md, "Error lines")."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from textenvs import __version__
from textenvs.core.declaration import load_entry_point
from textenvs.core.registry import UnknownEnvError

# Subcommands ("module:Command"), in the order `--help` lists them.
COMMANDS = (
    "textenvs.cli.info:LIST",
    "textenvs.cli.info:RULES",
    "textenvs.cli.play:COMMAND",
    "textenvs.cli.run:COMMAND",
    "textenvs.cli.eval:COMMAND",
    "textenvs.cli.report:COMMAND",
    "textenvs.cli.export:COMMAND",
    "textenvs.cli.train:COMMAND",
    "textenvs.cli.save_model:COMMAND",
    "textenvs.cli.serve:COMMAND",
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
    for command in COMMANDS:
        load_entry_point(command).add_to(sub)
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
