"""`textenvs report DIR [DIR ...]`: report.md + a self-contained report.html."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="write report.md and report.html for one or more eval runs",
        description="Write report.md and a self-contained report.html (inline CSS and SVG "
        "plots, readable offline) for eval run directories, with a transcript page per "
        "episode. Several DIRs are compared side by side with a paired per-seed test "
        "against the first.",
    )
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="eval run directories")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="OUT",
        help="where report.md/report.html go (default: DIR for one run, ./report for several)",
    )
    p.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from textenvs.evals.report import write_report
    from textenvs.evals.store import RunDirError

    out = args.out or (args.dirs[0] if len(args.dirs) == 1 else Path("report"))
    try:
        paths = write_report(args.dirs, out)
    except RunDirError as exc:
        print(f"textenvs report: error: {exc}")
        return 2
    for path in paths:
        print(path)
    return 0
