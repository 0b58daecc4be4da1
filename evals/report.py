"""Reports for eval runs, all in one output folder and nothing in the runs: `report.md`,
a self-contained `report.html` (inline CSS and SVG, nothing fetched), `results.csv`,
`results.tex`, the charts as SVG and PDF files, and readable transcript pages.

Statistics are recomputed from `episodes.jsonl`, so an interrupted run reports what it
finished. Each scenario's result is read against its reference band (random / scripted
/ ceiling, `textenvs.evals.bands`) as a normalised score; the "all" row averages those
scores, never raw returns of different scales. With several runs the first is the
baseline: each other run is compared with it on the (env, seed, episode) keys both ran
(see `metrics.compare`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from textenvs.evals import run_folder, store
from textenvs.evals.bands import load_bands
from textenvs.evals.figures import write_figures
from textenvs.evals.metrics import key_of
from textenvs.evals.report_data import Links, Report, Run, load_runs
from textenvs.evals.report_html import render_html
from textenvs.evals.report_md import render_markdown
from textenvs.evals.results_files import render_csv, render_tex
from textenvs.evals.transcript import (
    TRANSCRIPTS,
    safe_name,
    write_side_by_side,
    write_transcripts,
)

FIGURES = "figures"


def default_out(paths: list[Path]) -> Path:
    """`reports/<run>` for one run, `reports/<run>-vs-<run>...` for several (the first is
    the baseline), under the current directory: a report never writes into a run."""
    names = [p.resolve().name or "run" for p in paths]
    return Path("reports") / "-vs-".join(names)


def check_out(out: Path) -> None:
    """A report never writes into a run: not into any eval run's folder (one of the runs
    reported or another), nor into a folder inside one."""
    for folder in (out.resolve(), *out.resolve().parents):
        if (folder / run_folder.CONFIG).is_file() and (folder / run_folder.EPISODES).exists():
            where = "is" if folder == out.resolve() else f"is inside {folder},"
            raise store.RunDirError(
                f"--out {out} {where} an eval run folder; give the report a folder of its "
                "own (the default is reports/RUN)"
            )


def damage(run: Run) -> list[str]:
    """What the report of `run` leaves out because the run folder is damaged: a torn last
    line of episodes.jsonl (a write cut short), trajectories missing."""
    notes = []
    if store.has_torn_line(run.path):
        notes.append(
            f"{run.path}/{run_folder.EPISODES} ends in a torn line (a write cut short): that "
            "episode is left out; rerun the run's eval command with --resume to repair it "
            "and play that episode"
        )
    missing = [r for r in run.records if not (run.path / str(r.get("trajectory"))).is_file()]
    if missing:
        first = store.trajectory_file(key_of(missing[0]))
        notes.append(
            f"{run.path}: {len(missing)} episode(s) have no trajectory file (the first "
            f"{first}): they are counted, but have no transcript page"
        )
    return notes


def write_report(
    paths: list[Path], out: Path, warn: Callable[[str], None] | None = None
) -> list[Path]:
    """Everything in `out`, nothing in the runs: `report.md`, `report.html`,
    `results.csv`, `results.tex`, `figures/` (each chart as SVG and PDF), a transcript
    page per episode (`transcripts/<run>/`) and, when comparing, side-by-side pages."""
    bands = load_bands()
    runs = load_runs(paths, bands)
    check_out(out)
    for run in runs if warn is not None else []:
        for note in damage(run):
            warn(note)
    out.mkdir(parents=True, exist_ok=True)
    links: Links = {}
    folders: list[str] = []
    for i, run in enumerate(runs):
        name = safe_name(run.label)
        folders.append(name if name not in folders else f"{name}-{i + 1}")
        folder = out / TRANSCRIPTS / folders[-1]
        back = os.path.relpath(out / "report.html", folder)
        for key, page in write_transcripts(run.path, run.records, folder, back).items():
            links[(run.label, *key)] = os.path.relpath(page, out)
    for other in runs[1:]:
        for key, rel in write_side_by_side(out, runs[0], other, links).items():
            links[("vs", other.label, *key)] = rel
    report = Report(runs, bands, links, datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    written = {
        out / "report.md": render_markdown(report),
        out / "report.html": render_html(report),
        out / "results.csv": render_csv(report),
        out / "results.tex": render_tex(report),
    }
    for path, text in written.items():
        store.write_atomic(path, text)
    return [*written, *write_figures(report, out / FIGURES)]
