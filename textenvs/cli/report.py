"""`textenvs report DIR [DIR ...]`: report.md, a self-contained report.html, results.csv
and results.tex."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from textenvs.cli.command import Command


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="eval run directories")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="OUT",
        help="the report's own folder; nothing is written into the runs (default: "
        "reports/RUN for one run, reports/RUN1-vs-RUN2... for several)",
    )


def _report(args: argparse.Namespace) -> int:
    from textenvs.evals.report import FIGURES, default_out, write_report
    from textenvs.evals.store import RunDirError
    from textenvs.evals.transcript import TRANSCRIPTS

    out = args.out or default_out(args.dirs)
    try:
        paths = write_report(args.dirs, out, warn=_warn)
    except RunDirError as exc:
        print(f"textenvs report: error: {exc}", file=sys.stderr)
        return 2
    figures = sum(1 for path in paths if path.parent.name == FIGURES) // 2
    print(f"report in {out}/: report.html (open it in a browser), report.md, results.csv, "
          f"results.tex, {FIGURES}/ ({figures} charts as SVG and PDF), {TRANSCRIPTS}/")  # fmt: skip
    return 0


def _warn(note: str) -> None:
    print(f"textenvs report: warning: {note}", file=sys.stderr)


COMMAND = Command(
    "report",
    help="write report.md, report.html, results.csv, results.tex and figures for eval runs",
    description="Write report.md, a self-contained report.html (inline CSS and SVG "
    "plots, readable offline), results.csv (one row per run and scenario) and "
    "results.tex (a booktabs table) for eval run directories, each chart as SVG and PDF "
    "(figures/), and a transcript page per episode, all in one output folder. Each "
    "scenario is read against its reference band (random, scripted, ceiling) as a "
    "normalised score with a 95% bootstrap interval over seeds. Several DIRs are "
    "compared with a paired per-seed test against the first, and each seed both played "
    "gets a side-by-side page.",
    handler=_report,
    arguments=_arguments,
)
