"""Reports for eval runs: `report.md`, a self-contained `report.html` (inline CSS and
SVG, nothing fetched) and one readable transcript page per episode.

Statistics are recomputed from `episodes.jsonl`, so an interrupted run reports what it
finished. With several runs the first is the baseline: each other run is compared with
it on the (env, seed, episode) keys both ran (see `metrics.compare`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from textenvs.evals import plots, store
from textenvs.evals.episode import AGENT_ERROR
from textenvs.evals.metrics import Record, compare, key_of, summarize_by_env
from textenvs.evals.transcript import write_transcripts


@dataclass
class Run:
    path: Path
    label: str
    config: dict[str, Any]
    records: list[Record]
    summary: dict[str, Record]

    @property
    def agent(self) -> str:
        agent = self.config.get("agent", {})
        model = agent.get("model")
        return f"{agent.get('name', '?')}" + (f" ({model})" if model else "")


def load_run(path: Path) -> Run:
    config = store.read_config(path)
    if config is None:
        raise store.RunDirError(f"{path} is not an eval run (no {store.CONFIG})")
    seen: dict[tuple[str, int, int], Record] = {}
    for record in store.read_episodes(path):
        seen.setdefault(key_of(record), record)
    records = list(seen.values())
    return Run(path, path.name, config, records, summarize_by_env(records, config.get("prices")))


def load_runs(paths: list[Path]) -> list[Run]:
    runs = [load_run(p) for p in paths]
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
    """Write transcripts for every run, then `out/report.md` and `out/report.html`."""
    runs = load_runs(paths)
    out.mkdir(parents=True, exist_ok=True)
    links = {}
    for run in runs:
        for key, rel in write_transcripts(run.path, run.records).items():
            links[(run.label, *key)] = os.path.relpath(run.path / rel, out)
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    md, html = out / "report.md", out / "report.html"
    store.write_atomic(md, render_markdown(runs, links, generated))
    store.write_atomic(html, render_html(runs, links, generated))
    return [md, html]


# ----- shared rows -------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x:.1%}"


def summary_row(s: Record) -> list[str]:
    lo, hi = s["success_ci95"]
    n = max(1, s["episodes"])
    cost = "-" if s["cost_per_episode"] is None else f"${s['cost_per_episode']:.4f}"
    return [
        str(s["episodes"]),
        f"{s['successes']}/{s['scored_episodes']}",
        _pct(s["success_rate"]),
        f"{_pct(lo)} - {_pct(hi)}",
        f"{s['mean_return']:.3f} ± {s['return_stderr']:.3f}",
        f"{s['mean_steps']:.1f}",
        _pct(s["invalid_action_rate"]),
        str(s["agent_errors"]),
        f"{s['tokens_per_episode']:.0f}",
        f"{s['tokens'].get('prompt', 0) / n:.0f} ({s['tokens'].get('cached', 0) / n:.0f})",
        "-" if s.get("cacheable_share") is None else _pct(s["cacheable_share"]),
        cost,
    ]


SUMMARY_HEAD = ["env", "run", "episodes", "successes", "success", "95% CI", "return ± se",
                "steps", "invalid", "agent errors", "tokens/ep", "prompt/ep (cached)",
                "cacheable", "cost/ep"]  # fmt: skip
COMPARE_HEAD = ["env", "run vs baseline", "pairs", "success (base → run)", "Δ success",
                "only base / only run", "McNemar p", "Δ return ± se", "sign-test p"]  # fmt: skip
EPISODE_HEAD = ["seed", "ep", "outcome", "return", "steps", "invalid", "tokens", "transcript"]


def summary_rows(runs: list[Run]) -> list[list[str]]:
    rows = []
    for env in [*env_order(runs), "all"]:
        for run in runs:
            if env in run.summary:
                rows.append([env, run.label, *summary_row(run.summary[env])])
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
            rows.append(
                [
                    env,
                    f"{run.label} vs {base.label}",
                    str(c["pairs"]),
                    f"{_pct(c['success_rate_a'])} → {_pct(c['success_rate_b'])}",
                    f"{c['success_diff'] * 100:+.1f} pp",
                    f"{c['a_only_success']} / {c['b_only_success']}",
                    f"{c['success_p']:.3g}",
                    f"{c['mean_return_diff']:+.3f} ± {c['return_diff_stderr']:.3f}",
                    f"{c['return_p']:.3g}",
                ]
            )
    return rows


def error_groups(runs: list[Run]) -> list[tuple[Run, str, str, list[Record]]]:
    """Agent errors grouped by (run, env, message): one line each, every seed linked."""
    groups: dict[tuple[str, str, str], tuple[Run, list[Record]]] = {}
    for run in runs:
        for r in sorted(run.records, key=key_of):
            if r["outcome"] == AGENT_ERROR:
                entry = groups.setdefault((run.label, r["env"], str(r["error"])), (run, []))
                entry[1].append(r)
    return [(run, env, error, rs) for (_, env, error), (run, rs) in groups.items()]


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
                str(c.get("seeds")),
                str(c.get("max_invalid")),
                str(c.get("textenvs_version")),
                str(c.get("created_at")),
            ]
        )
    return rows


RUN_HEAD = ["run", "directory", "agent", "episodes", "seeds", "max invalid", "version", "created"]


# ----- markdown ----------------------------------------------------------------------


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(runs: list[Run], links: dict[tuple, str], generated: str) -> str:
    parts = [
        "# textenvs eval report",
        f"Generated {generated}. Success CIs are 95% Wilson intervals; return ± is the "
        "standard error of the mean; invalid = invalid commands / steps. Agent errors are "
        "listed below and kept out of success, return and step statistics.",
        "## Runs",
        _md_table(RUN_HEAD, run_rows(runs)),
        "## Results by scenario",
        _md_table(SUMMARY_HEAD, summary_rows(runs)),
    ]
    if len(runs) > 1:
        parts += [
            f"## Paired comparison against {runs[0].label}",
            "Pairs are the (env, seed, episode) keys both runs finished. McNemar: exact "
            "two-sided sign test on the pairs where exactly one run succeeded. Return: exact "
            "two-sided sign test on per-pair return differences (ties dropped).",
            _md_table(COMPARE_HEAD, compare_rows(runs)),
        ]
    groups = error_groups(runs)
    if groups:
        total = sum(len(rs) for *_, rs in groups)
        items = []
        for run, env, error, rs in groups:
            seeds = ", ".join(
                f"[{r['seed']}]({links.get((run.label, *key_of(r)), '')})" for r in rs
            )
            items.append(f"- {run.label} {env}, {len(rs)} episode(s): {error}  \n  seeds: {seeds}")
        parts += [f"## Agent errors ({total})", "\n".join(items)]
    parts.append("## Episodes")
    for env in env_order(runs):
        for run in runs:
            rows = [_episode_cells(run, r, links, md=True) for r in _sorted(run, env)]
            if rows:
                parts += [f"### {env} - {run.label}", _md_table(EPISODE_HEAD, rows)]
    return "\n\n".join(parts) + "\n"


def _sorted(run: Run, env: str) -> list[Record]:
    return sorted((r for r in run.records if r["env"] == env), key=key_of)


def _episode_cells(run: Run, r: Record, links: dict[tuple, str], *, md: bool) -> list[str]:
    link = links.get((run.label, *key_of(r)), "")
    name = "view"
    anchor = f"[{name}]({link})" if md else f'<a href="{escape(link)}">{name}</a>'
    outcome = r["outcome"] if md else f'<span class="o-{r["outcome"]}">{r["outcome"]}</span>'
    return [
        str(r["seed"]),
        str(r.get("episode", 0)),
        outcome,
        f"{r['return']:g}",
        str(r["steps"]),
        str(r["invalid_actions"]),
        str(r.get("tokens", {}).get("total", 0)),
        anchor if link else "-",
    ]


# ----- HTML --------------------------------------------------------------------------

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;
padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td:first-child,td:nth-child(2),th:first-child{text-align:left}
tr.all td{font-weight:600;background:#fafafa}
.o-success{color:#1e7d3a}.o-failure,.o-timeout,.o-invalid_limit{color:#9a4b00}
.o-agent_error,.o-context_overflow{color:#b00020;font-weight:600}
.chart{display:inline-block;vertical-align:top}
.note{color:#555}.err{color:#b00020}details{margin:6px 0}summary{cursor:pointer}
"""


def _html_table(head: list[str], rows: list[list[str]], *, raw: bool = False) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = []
    for row in rows:
        cls = ' class="all"' if row and row[0] == "all" else ""
        cells = "".join(f"<td>{c if raw else escape(c)}</td>" for c in row)
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _charts(runs: list[Run]) -> str:
    envs = env_order(runs)
    series = [plots.Series(run.label, plots.color(i)) for i, run in enumerate(runs)]

    def scored(run: Run, env: str, field: str) -> list[float]:
        ok = (r for r in run.records if r["env"] == env and r["outcome"] != AGENT_ERROR)
        return [float(r[field]) for r in ok]

    success = [
        [
            (s["success_rate"], *s["success_ci95"])
            if (s := run.summary.get(env)) and s["scored_episodes"]
            else None
            for env in envs
        ]
        for run in runs
    ]
    charts = [plots.success_chart(envs, series, success)]
    # Returns and steps differ in scale between scenarios: one pair of charts per scenario.
    for env in envs:
        for field, what in (("return", "return"), ("steps", "steps")):
            values = [[scored(run, env, field)] for run in runs]
            title = f"{env}: {what} per episode"
            charts.append(plots.box_chart(title, [""], series, values, width=540, label_w=20))
    return "".join(f'<div class="chart">{svg}</div>' for svg in charts)


def render_html(runs: list[Run], links: dict[tuple, str], generated: str) -> str:
    title = "textenvs eval report: " + ", ".join(run.label for run in runs)
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="note">Generated {escape(generated)}. Success CIs are 95% Wilson '
        "intervals; return ± is the standard error of the mean; invalid = invalid commands "
        "/ steps. Agent errors are listed and kept out of success, return and step "
        "statistics.</p>",
        "<h2>Runs</h2>",
        _html_table(RUN_HEAD, run_rows(runs)),
        "<h2>Results by scenario</h2>",
        f'<div id="summary">{_html_table(SUMMARY_HEAD, summary_rows(runs))}</div>',
        "<h2>Plots</h2>",
        _charts(runs),
    ]
    if len(runs) > 1:
        body += [
            f"<h2>Paired comparison against {escape(runs[0].label)}</h2>",
            '<p class="note">Pairs are the (env, seed, episode) keys both runs finished. '
            "McNemar: exact two-sided sign test on the pairs where exactly one run "
            "succeeded. Return: exact two-sided sign test on per-pair return differences "
            "(ties dropped).</p>",
            f'<div id="compare">{_html_table(COMPARE_HEAD, compare_rows(runs))}</div>',
        ]
    groups = error_groups(runs)
    if groups:
        total = sum(len(rs) for *_, rs in groups)
        items = []
        for run, env, error, rs in groups:
            seeds = " ".join(
                f'<a href="{escape(links.get((run.label, *key_of(r)), ""))}">{r["seed"]}</a>'
                for r in rs
            )
            items.append(
                f"<li>{escape(run.label)} {escape(env)}, {len(rs)} episode(s): "
                f'<span class="err">{escape(error)}</span><br>seeds: {seeds}</li>'
            )
        body += [f"<h2>Agent errors ({total})</h2><ul>{''.join(items)}</ul>"]
    body.append("<h2>Episodes</h2>")
    for env in env_order(runs):
        for run in runs:
            rows = [_episode_cells(run, r, links, md=False) for r in _sorted(run, env)]
            if rows:
                s = run.summary[env]
                body.append(
                    f"<details><summary>{escape(env)} - {escape(run.label)}: "
                    f"{s['successes']}/{s['scored_episodes']} succeeded</summary>"
                    f"{_html_table(EPISODE_HEAD, rows, raw=True)}</details>"
                )
    # Machine-readable figures; "</" is escaped so the JSON cannot close the script tag.
    data = json.dumps({run.label: run.summary for run in runs}).replace("</", "<\\/")
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}{plots.SVG_CSS}</style></head>"
        f"<body>{''.join(body)}"
        f'<script type="application/json" id="summary-data">{data}</script>'
        "</body></html>\n"
    )
