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
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from textenvs.evals import run_folder, store
from textenvs.evals.bands import band_for, load_bands, scenario_label
from textenvs.evals.learning import learning_curves
from textenvs.evals.metrics import Record, key_of, summarize_by_env
from textenvs.evals.transcript import (
    TRANSCRIPTS,
    safe_name,
    write_side_by_side,
    write_transcripts,
)

Links = dict[tuple, str]
FIGURES = "figures"


@dataclass
class Run:
    path: Path
    label: str
    config: dict[str, Any]
    records: list[Record]
    summary: dict[str, Record]

    @cached_property
    def learning(self) -> dict[str, Record]:
        """Learning curves per env (trial-mode runs; {} otherwise)."""
        return learning_curves(self.records)

    @property
    def agent(self) -> str:
        agent = self.config.get("agent", {})
        # the action mode too: json-mode runs measure decisions only, text-mode runs
        # format-following as well, so the two are never compared unnamed; and
        # observations sent as changes, another prompt than the whole observations
        details = [str(agent[k]) for k in ("model", "action_mode") if agent.get(k)]
        if agent.get("observations", "full") != "full":
            details.append(f"observations: {agent['observations']}")
        return f"{agent.get('name', '?')}" + (f" ({', '.join(details)})" if details else "")

    @property
    def versions(self) -> dict[str, str]:
        return {env: str(v) for env, v in (self.config.get("envs") or {}).items()}

    @property
    def levels(self) -> dict[str, int | None]:
        """The level each scenario played (None: it has no levels, or mixed them): as its
        episodes say, else as the run's config planned it."""
        played = {env: s.get("level") for env, s in self.summary.items() if env != "all"}
        return {**(self.config.get("levels") or {}), **played}

    def env_label(self, env: str) -> str:
        """The scenario as this run played it: `megacity (level 2)`."""
        return scenario_label(env, self.levels.get(env))


def load_run(path: Path, bands: dict[str, Any] | None = None) -> Run:
    store.check_run_dir(path, store.CONFIG)
    config = store.read_config(path)
    if config is None:
        raise store.RunDirError(f"{path} is not an eval run (no {run_folder.CONFIG})")
    seen: dict[tuple[str, int, int], Record] = {}
    for record in store.read_episodes(path):
        seen.setdefault(key_of(record), record)
    records = list(seen.values())
    summary = summarize_by_env(records, config.get("prices"), bands, config.get("env_options"))
    return Run(path, path.name, config, records, summary)


def load_runs(paths: list[Path], bands: dict[str, Any] | None = None) -> list[Run]:
    runs = [load_run(p, bands) for p in paths]
    labels = [r.path.resolve().name or str(r.path) for r in runs]
    for i, run in enumerate(runs):  # unique labels even for runs in same-named folders
        run.label = labels[i] if labels.count(labels[i]) == 1 else f"{labels[i]}#{i + 1}"
    return runs


def env_order(runs: list[Run]) -> list[str]:
    envs: list[str] = []
    for run in runs:
        envs += [e for e in run.summary if e != "all" and e not in envs]
    return envs


def default_out(paths: list[Path]) -> Path:
    """`reports/<run>` for one run, `reports/<run>-vs-<run>...` for several (the first is
    the baseline), under the current directory: a report never writes into a run."""
    names = [p.resolve().name or "run" for p in paths]
    return Path("reports") / "-vs-".join(names)


def check_out(out: Path) -> None:
    """A report never writes into a run: not into any eval run's folder (one of the runs
    reported or another), nor into a folder inside one."""
    for folder in (out.resolve(), *out.resolve().parents):
        if (folder / store.CONFIG).is_file() and (folder / store.EPISODES).exists():
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
            f"{run.path}/{store.EPISODES} ends in a torn line (a write cut short): that "
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
    from textenvs.evals.figures import write_figures
    from textenvs.evals.report_html import render_html
    from textenvs.evals.report_md import render_markdown
    from textenvs.evals.results_files import render_csv, render_tex

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


@dataclass
class Report:
    runs: list[Run]
    bands: dict[str, Any]
    links: Links
    generated: str

    @property
    def envs(self) -> list[str]:
        return env_order(self.runs)

    def band(self, env: str, run: Run | None = None) -> dict[str, Any] | None:
        """The band `run` (by default the first, the baseline) is read against: the
        band of the level it played."""
        run = run or next((r for r in self.runs if env in r.summary), self.runs[0])
        return band_for(self.bands, env, run.levels.get(env))
