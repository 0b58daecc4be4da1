"""Reports for eval runs: `report.md`, a self-contained `report.html` (inline CSS and
SVG, nothing fetched), `results.csv`, `results.tex`, and readable transcript pages.

Statistics are recomputed from `episodes.jsonl`, so an interrupted run reports what it
finished. Each scenario's result is read against its reference band (random / scripted
/ ceiling, `textenvs.evals.bands`) as a normalised score; the "all" row averages those
scores, never raw returns of different scales. With several runs the first is the
baseline: each other run is compared with it on the (env, seed, episode) keys both ran
(see `metrics.compare`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from html import escape
from pathlib import Path
from typing import Any

from textenvs.evals import store
from textenvs.evals.bands import headline, load_bands, version_warnings
from textenvs.evals.episode import AGENT_ERROR
from textenvs.evals.learning import learning_curves
from textenvs.evals.metrics import Record, compare, key_of, summarize_by_env
from textenvs.evals.skills import LABELS, format_value
from textenvs.evals.transcript import write_side_by_side, write_transcripts

Links = dict[tuple, str]


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
        # format-following as well, so the two are never compared unnamed
        details = ", ".join(str(agent[k]) for k in ("model", "action_mode") if agent.get(k))
        return f"{agent.get('name', '?')}" + (f" ({details})" if details else "")

    @property
    def versions(self) -> dict[str, str]:
        return {env: str(v) for env, v in (self.config.get("envs") or {}).items()}


def load_run(path: Path, bands: dict[str, Any] | None = None) -> Run:
    config = store.read_config(path)
    if config is None:
        raise store.RunDirError(f"{path} is not an eval run (no {store.CONFIG})")
    seen: dict[tuple[str, int, int], Record] = {}
    for record in store.read_episodes(path):
        seen.setdefault(key_of(record), record)
    records = list(seen.values())
    summary = summarize_by_env(records, config.get("prices"), bands)
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


def write_report(paths: list[Path], out: Path) -> list[Path]:
    """Transcripts for every run (and side-by-side pages when comparing), then
    `report.md`, `report.html`, `results.csv` and `results.tex` in `out`."""
    from textenvs.evals.report_html import render_html
    from textenvs.evals.report_md import render_markdown
    from textenvs.evals.results_files import render_csv, render_tex

    bands = load_bands()
    runs = load_runs(paths, bands)
    out.mkdir(parents=True, exist_ok=True)
    html = out / "report.html"
    links: Links = {}
    for run in runs:
        back = os.path.relpath(html, run.path / store.TRANSCRIPTS)
        for key, rel in write_transcripts(run.path, run.records, back).items():
            links[(run.label, *key)] = os.path.relpath(run.path / rel, out)
    for other in runs[1:]:
        for key, rel in write_side_by_side(out, runs[0], other, links).items():
            links[("vs", other.label, *key)] = rel
    report = Report(runs, bands, links, datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    written = {
        out / "report.md": render_markdown(report),
        html: render_html(report),
        out / "results.csv": render_csv(report),
        out / "results.tex": render_tex(report),
    }
    for path, text in written.items():
        store.write_atomic(path, text)
    return list(written)


@dataclass
class Report:
    runs: list[Run]
    bands: dict[str, Any]
    links: Links
    generated: str

    @property
    def envs(self) -> list[str]:
        return env_order(self.runs)

    def band(self, env: str) -> dict[str, Any] | None:
        return self.bands["scenarios"].get(env)


# ----- formatting --------------------------------------------------------------------

NA = "n/a"


def pct(x: float | None) -> str:
    return NA if x is None else f"{x:.1%}"


def num(x: float | None, spec: str = ".3f") -> str:
    return NA if x is None else format(x, spec)


def plain(value: Any) -> str:
    """A config value for people: no Python reprs (None, True, dicts)."""
    if value is None or value == {} or value == []:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{k} {plain(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(plain(v) for v in value)
    return str(value)


def ci(s: Record) -> str:
    return (
        NA
        if s["success_ci95"] is None
        else f"{pct(s['success_ci95'][0])} - {pct(s['success_ci95'][1])}"
    )


def plus_minus(value: float | None, se: float | None) -> str:
    if value is None:
        return NA
    return f"{value:.3f}" + (f" ± {se:.3f}" if se is not None else "")


# ----- shared rows -------------------------------------------------------------------

RUN_HEAD = ["run", "directory", "agent", "episodes", "seeds", "episodes/seed", "max invalid",
            "scenario versions", "textenvs", "created"]  # fmt: skip
SCORE_HEAD = ["env", "run", "headline metric", "result", "random", "scripted", "ceiling",
              "normalised"]  # fmt: skip
SUMMARY_HEAD = ["env", "run", "episodes", "successes", "success", "95% CI", "return ± se",
                "steps", "invalid", "agent errors", "tokens/ep", "prompt/ep (cached)",
                "cacheable", "cost/ep"]  # fmt: skip
PASS_HEAD = ["env", "run", "k", "pass@k", "pass^k"]
LEARNING_HEAD = [
    "env",
    "run",
    "groups x trials",
    "success by trial",
    "slope / trial (95% CI)",
    "gain last vs first (95% CI)",
    "return gain (95% CI)",
]
COMPARE_HEAD = ["env", "run vs baseline", "pairs", "success (base → run)", "Δ success",
                "only base / only run", "McNemar p", "Δ return ± se", "sign-test p"]  # fmt: skip
EPISODE_HEAD = ["seed", "ep", "outcome", "return", "steps", "invalid", "tokens", "transcript"]


def run_rows(runs: list[Run]) -> list[list[str]]:
    rows = []
    for run in runs:
        c = run.config
        planned = len(c["envs"]) * len(c["seed_list"]) * c["episodes_per_seed"]
        rows.append(
            [
                run.label,
                str(run.path),
                run.agent,
                f"{len(run.records)}/{planned}",
                plain(c.get("seeds")),
                plain(c.get("episodes_per_seed")),
                plain(c.get("max_invalid")),
                ", ".join(f"{env} v{v}" for env, v in run.versions.items()),
                plain(c.get("textenvs_version")),
                plain(c.get("created_at")),
            ]
        )
    return rows


def band_cells(band: dict[str, Any] | None) -> list[str]:
    if band is None:
        return [NA, NA, NA]
    return [
        num(band["random"]),
        num(band["scripted"]),
        f"{num(band['ceiling'])} ({band['ceiling_kind']})",
    ]


def score_rows(report: Report) -> list[list[str]]:
    rows = []
    for env in report.envs:
        for run in report.runs:
            if env in run.summary:
                s = run.summary[env]
                rows.append(
                    [env, run.label, headline(env).label, num(s["headline"]),
                     *band_cells(report.band(env)), num(s["normalised"])]
                )  # fmt: skip
    for run in report.runs:
        rows.append(["all", run.label, "mean normalised score", "", "", "", "",
                     num(run.summary["all"]["normalised"])])  # fmt: skip
    return rows


def summary_row(s: Record) -> list[str]:
    n = max(1, s["episodes"])
    cost = NA if s["cost_per_episode"] is None else f"${s['cost_per_episode']:.4f}"
    return [
        str(s["episodes"]),
        f"{s['successes']}/{s['scored_episodes']}",
        pct(s["success_rate"]),
        ci(s),
        plus_minus(s["mean_return"], s["return_stderr"]),
        num(s["mean_steps"], ".1f"),
        pct(s["invalid_action_rate"]),
        str(s["agent_errors"]),
        f"{s['tokens_per_episode']:.0f}",
        f"{s['tokens'].get('prompt', 0) / n:.0f} ({s['tokens'].get('cached', 0) / n:.0f})",
        pct(s.get("cacheable_share")),
        cost,
    ]


def summary_rows(runs: list[Run]) -> list[list[str]]:
    rows = []
    for env in [*env_order(runs), "all"]:
        for run in runs:
            if env in run.summary:
                rows.append([env, run.label, *summary_row(run.summary[env])])
    return rows


def skill_head(runs: list[Run]) -> list[str]:
    return ["env", "skill metric", *(run.label for run in runs)]


def skill_rows(runs: list[Run]) -> list[list[str]]:
    rows = []
    for env in env_order(runs):
        fields: list[str] = []
        for run in runs:
            fields += [f for f in run.summary.get(env, {}).get("skills", {}) if f not in fields]
        for field in fields:
            cells = [
                format_value(field, run.summary[env]["skills"].get(field))
                if env in run.summary
                else NA
                for run in runs
            ]
            rows.append([env, LABELS.get(field, (field,))[0], *cells])
    return rows


def pass_rows(runs: list[Run]) -> list[list[str]]:
    rows = []
    for env in env_order(runs):
        for run in runs:
            s = run.summary.get(env, {})
            for k, value in s.get("pass@k", {}).items():
                rows.append([env, run.label, k, pct(value), pct(s["pass^k"][k])])
    return rows


def compare_rows(runs: list[Run]) -> list[list[str]]:
    rows = []
    base = runs[0]
    for run in runs[1:]:
        for env in [*env_order(runs), "all"]:
            a = [r for r in base.records if env in ("all", r["env"])]
            b = [r for r in run.records if env in ("all", r["env"])]
            c = compare(a, b)
            if not c["pairs"]:
                continue
            # Returns of different scenarios have different scales: no pooled mean.
            delta = (
                NA if env == "all" else plus_minus(c["mean_return_diff"], c["return_diff_stderr"])
            )
            delta = delta if delta == NA else ("+" if c["mean_return_diff"] >= 0 else "") + delta
            rows.append(
                [
                    env,
                    f"{run.label} vs {base.label}",
                    str(c["pairs"]),
                    f"{pct(c['success_rate_a'])} → {pct(c['success_rate_b'])}",
                    f"{c['success_diff'] * 100:+.1f} pp",
                    f"{c['a_only_success']} / {c['b_only_success']}",
                    f"{c['success_p']:.3g}",
                    delta,
                    f"{c['return_p']:.3g}",
                ]
            )
    return rows


def warnings(report: Report) -> list[str]:
    """What makes the figures hard to compare: band versions, different scenario or
    seed sets between runs, runs that did not finish."""
    out = []
    for run in report.runs:
        out += version_warnings(report.bands, run.label, run.versions)
        missing = [env for env in run.versions if env not in report.bands["scenarios"]]
        if missing:
            out.append(f"{run.label}: no reference band for {', '.join(missing)}")
    base = report.runs[0]
    for run in report.runs[1:]:
        if set(run.versions) != set(base.versions):
            out.append(
                f"{run.label} and {base.label} cover different scenarios "
                f"({', '.join(run.versions)} vs {', '.join(base.versions)}): their 'all' rows "
                "average different things"
            )
        if run.config.get("seed_list") != base.config.get("seed_list") or run.config.get(
            "episodes_per_seed"
        ) != base.config.get("episodes_per_seed"):
            out.append(
                f"{run.label} and {base.label} ran different seed sets "
                f"({plain(run.config.get('seeds'))} vs {plain(base.config.get('seeds'))}): "
                "compare them on the paired rows only"
            )
    return out


def error_groups(runs: list[Run]) -> list[tuple[Run, str, str, list[Record]]]:
    """Agent errors grouped by (run, env, message): one line each, every seed linked."""
    groups: dict[tuple[str, str, str], tuple[Run, list[Record]]] = {}
    for run in runs:
        for r in sorted(run.records, key=key_of):
            if r["outcome"] == AGENT_ERROR:
                entry = groups.setdefault((run.label, r["env"], str(r["error"])), (run, []))
                entry[1].append(r)
    return [(run, env, error, rs) for (_, env, error), (run, rs) in groups.items()]


def sorted_records(run: Run, env: str) -> list[Record]:
    return sorted((r for r in run.records if r["env"] == env), key=key_of)


def episode_cells(report: Report, run: Run, r: Record, *, md: bool) -> list[str]:
    def link(text: str, href: str) -> str:
        return f"[{text}]({href})" if md else f'<a href="{escape(href)}">{text}</a>'

    key = key_of(r)
    page = report.links.get((run.label, *key))
    pair = report.links.get(("vs", run.label, *key))
    anchors = [link("view", page)] if page else []
    if pair:
        anchors.append(link(f"vs {report.runs[0].label}", pair))
    outcome = r["outcome"] if md else f'<span class="o-{r["outcome"]}">{r["outcome"]}</span>'
    return [
        str(r["seed"]),
        str(r.get("episode", 0)),
        outcome,
        f"{r['return']:g}",
        str(r["steps"]),
        str(r["invalid_actions"]),
        str((r.get("tokens") or {}).get("total", 0)),
        " · ".join(anchors) or "-",
    ]


def learning_rows(runs: list[Run]) -> list[list[str]]:
    """One row per (env, run) of a trial-mode run: the curve, its slope and its gain."""

    def interval(figure: Record, spec: str) -> str:
        lo_hi = figure["ci95"]
        bounds = f" [{format(lo_hi[0], spec)}, {format(lo_hi[1], spec)}]" if lo_hi else ""
        return format(figure["mean"], spec) + bounds

    rows = []
    for env in env_order(runs):
        for run in runs:
            c = run.learning.get(env)
            if c is None:
                continue
            rows.append(
                [
                    env,
                    run.label,
                    f"{c['groups']} x {c['trials']}",
                    " → ".join(f"{t['success_rate']:.0%}" for t in c["by_trial"]),
                    interval(c["slope"]["success"], "+.3f"),
                    interval(c["gain"]["success"], "+.1%"),
                    interval(c["gain"]["return"], "+.3g"),
                ]
            )
    return rows


# ----- notes shared by the Markdown and HTML pages --------------------------------------

PASS_NOTE = "Over k episodes of one seed: pass@k, at least one succeeds; pass^k, all do."
READING = (
    "Each scenario is scored on its headline metric and read against its reference band: "
    "random play, the scripted agent, and the best known ceiling (exact, a bound, or an "
    "estimate). Normalised = (result - random) / (ceiling - random), clipped to [0, 1]; "
    "the 'all' row averages normalised scores. Success CIs are 95% Wilson intervals; "
    "± is the standard error of the mean clustered by seed; invalid = invalid commands / "
    "steps. Agent errors are listed and kept out of every statistic."
)


LEARNING_NOTE = (
    "Trial mode: one agent plays each group of consecutive seeds in order, in one "
    "conversation. Only complete groups without agent errors count. Success by trial "
    "index; slope: least-squares slope of success on the trial index, per group, "
    "averaged; gain: mean of the last m trials minus the first m (m = trials // 3, at "
    "least 1), per group, averaged. Intervals are 95%, across groups."
)


COMPARE_NOTE = (
    "Pairs are the (env, seed, episode) keys both runs finished. McNemar: exact two-sided "
    "sign test on the pairs where exactly one run succeeded. Return: exact two-sided sign "
    "test on per-pair return differences (ties dropped); no mean return difference over "
    "all scenarios, whose returns have different scales."
)
