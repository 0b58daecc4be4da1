"""`textenvs report DIR [DIR ...]`: report.md, a self-contained report.html, results.csv
and results.tex."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="write report.md, report.html, results.csv and results.tex for eval runs",
        description="Write report.md, a self-contained report.html (inline CSS and SVG "
        "plots, readable offline), results.csv (one row per run and scenario) and "
        "results.tex (a booktabs table) for eval run directories, with a transcript page "
        "per episode. Each scenario is read against its reference band (random, scripted, "
        "ceiling) as a normalised score. Several DIRs are compared with a paired per-seed "
        "test against the first, and each seed both played gets a side-by-side page.",
    )
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="eval run directories")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="OUT",
        help="where the report files go (default: DIR for one run, ./report for several)",
    )
    p.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from textenvs.evals.report import write_report
    from textenvs.evals.store import RunDirError

    out = args.out or (args.dirs[0] if len(args.dirs) == 1 else Path("report"))
    try:
        paths = write_report(args.dirs, out)
    except RunDirError as exc:
        print(f"textenvs report: error: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(path)
    return 0
