"""The `textenvs` command. Each subcommand lives in its own module with a `register`."""

from __future__ import annotations

import argparse
import importlib
import sys

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
    "textenvs.cli.serve",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="textenvs",
        description="Text environments for evaluating LLMs as agents.",
        epilog="Run 'textenvs COMMAND --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"textenvs {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except UnknownEnvError as exc:
        print(f"textenvs: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
