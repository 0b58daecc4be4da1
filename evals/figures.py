"""The report's charts: each one inline in `report.html`, and as files for a paper
(`figures/<name>.svg` and `figures/<name>.pdf`, drawn from the same SVG)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textenvs.episodes.protocol import AGENT_ERROR
from textenvs.evals import plots, store
from textenvs.evals.bands import headline
from textenvs.evals.pdf import svg_to_pdf
from textenvs.evals.report_data import Report, Run
from textenvs.evals.transcript import safe_name


@dataclass(frozen=True)
class Figure:
    name: str  # the file name without extension
    svg: str  # for inline use: styled by `plots.SVG_CSS` on the page


def _series(runs: list[Run]) -> list[plots.Series]:
    return [plots.Series(run.label, plots.color(i)) for i, run in enumerate(runs)]


def band_figures(report: Report) -> list[Figure]:
    """Each scenario's headline result, per run, with its 95% CI and its reference band
    behind it."""
    series = _series(report.runs)
    figures = []
    for env in report.envs:
        values = []
        for run in report.runs:
            s = run.summary.get(env)
            value = s["headline"] if s else None
            if value is None:
                values.append(None)
            elif headline(env).field == "success_rate":
                values.append((value, *s["success_ci95"]))
            else:
                values.append((value, *(s.get("headline_ci95") or (value, value))))
        title = f"{env}: {headline(env).label}"
        svg = plots.band_chart(title, report.band(env), series, values)
        figures.append(Figure(f"scores-{safe_name(env)}", svg))
    return figures


def learning_figures(report: Report) -> list[Figure]:
    """Per scenario, success by trial index with 95% CIs, one line per trial-mode run."""
    series = _series(report.runs)
    figures = []
    for env in report.envs:
        curves = [run.learning.get(env) for run in report.runs]
        if any(curves):
            points = [
                [(t["trial"], t["success_rate"], *t["success_ci95"]) for t in c["by_trial"]]
                if c
                else None
                for c in curves
            ]
            svg = plots.learning_chart(f"{env}: success by trial", series, points)
            figures.append(Figure(f"learning-{safe_name(env)}", svg))
    return figures


def outcome_figures(report: Report) -> list[Figure]:
    """Success rates with CIs; per scenario, histograms of steps, and of returns where
    they are not just 0/1 (the success chart already says all about those)."""
    runs, envs = report.runs, report.envs
    series = _series(runs)
    success = [
        [
            (s["success_rate"], *s["success_ci95"])
            if (s := run.summary.get(env)) and s["scored_episodes"]
            else None
            for env in envs
        ]
        for run in runs
    ]
    figures = [Figure("success", plots.success_chart(envs, series, success))]
    for env in envs:
        for field in ("return", "steps"):
            values = [
                [
                    float(r[field])
                    for r in run.records
                    if r["env"] == env and r["outcome"] != AGENT_ERROR
                ]
                for run in runs
            ]
            if field == "return" and {v for vs in values for v in vs} <= {0.0, 1.0}:
                continue
            svg = plots.histogram(f"{env}: {field} per episode", series, values)
            figures.append(Figure(f"{field}-{safe_name(env)}", svg))
    return figures


def write_figures(report: Report, folder: Path) -> list[Path]:
    """Every chart of the report as `folder/<name>.svg` (styled, standalone) and
    `folder/<name>.pdf`; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for figure in [*band_figures(report), *learning_figures(report), *outcome_figures(report)]:
        svg = plots.standalone(figure.svg)
        store.write_atomic(folder / f"{figure.name}.svg", svg)
        pdf = folder / f"{figure.name}.pdf"
        pdf.write_bytes(svg_to_pdf(svg))
        written += [folder / f"{figure.name}.svg", pdf]
    return written
