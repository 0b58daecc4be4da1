"""The play page from the command line: `textenvs play ENV --web` (one person, loopback)
and the recording switches `textenvs serve` shares with it (`--record`, `--baseline-set`)."""

from __future__ import annotations

import argparse
import sys
import time
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from textenvs.core import registry
from textenvs.core.numbers import bounded, positive_int
from textenvs.play.runs import DEFAULT_MAX_MB

if TYPE_CHECKING:  # the recorder is imported only when it is used
    from textenvs.play.record import HumanRecorder


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("human baselines (the play page at /play/)")
    group.add_argument(
        "--record",
        metavar="DIR",
        type=Path,
        default=None,
        help="record every episode finished on the play page as an eval run under DIR "
        "(one run folder per player and baseline set: compare them with models' runs "
        "with 'textenvs report'); players then give a name",
    )
    group.add_argument(
        "--baseline-set",
        metavar="NAME=SEEDS",
        action="append",
        default=[],
        help="a named list of seeds each player works through in order, e.g. pilot=0-9 "
        "(seed ranges as in 'textenvs eval --seeds'; repeatable; needs --record)",
    )
    group.add_argument(
        "--record-max-mb",
        metavar="MB",
        type=positive_int,
        default=DEFAULT_MAX_MB,
        help="disk the recordings under DIR may take in all (MB, files counted in whole "
        "4 KiB blocks); at the bound a recorded game is refused with 409 recording_full",
    )
    group.add_argument(
        "--record-client-max-mb",
        metavar="MB",
        type=bounded(int, 0),
        default=0,
        help="disk one client's recordings may take (MB; 0: --record-max-mb shared evenly "
        "between the clients)",
    )


def recorder_from_args(args: argparse.Namespace) -> HumanRecorder | None:
    """The recorder the switches ask for (None without --record); a `ValueError` names
    what is wrong."""
    from textenvs.play.players import parse_baseline_set
    from textenvs.play.record import HumanRecorder

    sets = [parse_baseline_set(text) for text in args.baseline_set]
    if sets and args.record is None:
        raise ValueError("--baseline-set needs --record DIR (sets exist to record baselines)")
    names = [s.name for s in sets]
    if len(set(names)) < len(names):
        raise ValueError("--baseline-set names a set twice")
    if args.record is None:
        return None
    if args.record.exists() and not args.record.is_dir():
        raise ValueError(f"--record {args.record} is not a directory")
    return HumanRecorder(
        args.record,
        sets,
        max_bytes=args.record_max_mb * 2**20,
        client_max_bytes=args.record_client_max_mb * 2**20,
    )


def add_web_arguments(parser: argparse.ArgumentParser) -> None:
    web = parser.add_argument_group("in the browser")
    web.add_argument(
        "--web",
        action="store_true",
        help="play on the web page instead of the terminal: serves it on loopback and "
        "opens it (an unreadable command then wastes a turn, as it does for a model)",
    )
    web.add_argument("--port", type=int, default=0, help="with --web: port (0 picks a free one)")
    web.add_argument(
        "--no-open", action="store_true", help="with --web: print the address, open no browser"
    )
    web.add_argument("--player", metavar="NAME", help="with --web: the player name to fill in")
    add_record_arguments(parser)


def play_in_browser(args: argparse.Namespace) -> int:
    """Serve the play page on loopback for one person until Ctrl-C."""
    from textenvs.play.page import create_app
    from textenvs.service.background import serve_in_thread

    scenario = registry.get(args.env)
    problem = ""
    if args.env_options:
        problem = "--env-option is not supported with --web (the page plays default options)"
    elif not 0 <= args.port <= 65535:
        problem = "--port must be between 0 and 65535"
    try:
        recorder = None if problem else recorder_from_args(args)
    except ValueError as exc:
        problem = str(exc)
    if problem:
        print(f"textenvs play: error: {problem}", file=sys.stderr)
        return 2
    query = {"env": scenario.name, "seed": args.seed, "player": args.player}
    app = create_app(max_sessions=64, recorder=recorder)
    try:
        with serve_in_thread(app, port=args.port) as url:
            page = f"{url}/play/?" + urlencode({k: v for k, v in query.items() if v is not None})
            print(f"{scenario.title}: play at {page}", flush=True)
            if recorder is not None:
                print(f"Finished episodes are recorded under {recorder.root}.", flush=True)
            print("Press Ctrl-C to stop.", flush=True)
            if not args.no_open:
                webbrowser.open(page)
            while True:
                time.sleep(3600)
    except RuntimeError:  # the port is taken (uvicorn logged why)
        print(f"textenvs play: error: cannot serve on port {args.port}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nStopped.")
    return 0
