"""The self-contained HTML report: inline CSS and SVG, nothing fetched, readable offline."""

from __future__ import annotations

import json
from html import escape

from textenvs.evals import plots
from textenvs.evals.figures import Figure, band_figures, learning_figures, outcome_figures
from textenvs.evals.metrics import key_of
from textenvs.evals.paired import PAIRED_HEAD, PAIRED_NOTE, paired_rows
from textenvs.evals.report_data import Report
from textenvs.evals.report_rows import (
    COMPARE_HEAD,
    COMPARE_NOTE,
    LEARNING_HEAD,
    LEARNING_NOTE,
    PASS_HEAD,
    PASS_NOTE,
    READING,
    RUN_HEAD,
    SCORE_HEAD,
    compare_rows,
    episode_cells,
    episode_head,
    error_groups,
    learning_rows,
    pass_rows,
    run_rows,
    score_rows,
    skill_head,
    skill_rows,
    sorted_records,
    summary_head,
    summary_rows,
    warnings,
)

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
.chart{display:inline-block;vertical-align:top;margin:0 8px 8px 0;max-width:100%}
.chart svg{max-width:100%;height:auto}
.note{color:#555}.err{color:#b00020}details{margin:6px 0}summary{cursor:pointer}
.warn{background:#fff6e0;border:1px solid #e8c66a;padding:6px 12px}
"""


def table(head: list[str], rows: list[list[str]], *, raw: bool = False) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = []
    for row in rows:
        cls = ' class="all"' if row and row[0] == "all" else ""
        cells = "".join(f"<td>{c if raw else escape(c)}</td>" for c in row)
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _charts(figures: list[Figure]) -> str:
    return "".join(f'<div class="chart">{figure.svg}</div>' for figure in figures)


def render_html(report: Report) -> str:
    runs = report.runs
    title = "textenvs eval report: " + ", ".join(run.label for run in runs)
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="note">Generated {escape(report.generated)}. {escape(READING)}</p>',
        "<h2>Runs</h2>",
        table(RUN_HEAD, run_rows(runs)),
    ]
    notes = warnings(report)
    if notes:
        items = "".join(f"<li>{escape(w)}</li>" for w in notes)
        body.append(f'<h2>Warnings</h2><ul class="warn" id="warnings">{items}</ul>')
    body += [
        "<h2>Scores against the reference bands</h2>",
        _charts(band_figures(report)),
        f'<div id="scores">{table(SCORE_HEAD, score_rows(report))}</div>',
        "<h2>Results by scenario</h2>",
        f'<div id="summary">{table(summary_head(runs), summary_rows(runs))}</div>',
        "<h2>Skill metrics</h2>",
        f'<div id="skills">{table(skill_head(runs), skill_rows(runs))}</div>',
    ]
    if pass_rows(runs):
        body += [
            "<h2>pass@k and pass^k</h2>",
            f'<p class="note">{escape(PASS_NOTE)}</p>',
            table(PASS_HEAD, pass_rows(runs)),
        ]
    if learning_rows(runs):
        body += [
            "<h2>Learning curves</h2>",
            f'<p class="note">{escape(LEARNING_NOTE)}</p>',
            _charts(learning_figures(report)),
            f'<div id="learning">{table(LEARNING_HEAD, learning_rows(runs))}</div>',
        ]
    body += ["<h2>Outcomes</h2>", _charts(outcome_figures(report))]
    if len(runs) > 1:
        body += [
            f"<h2>Paired comparison against {escape(runs[0].label)}</h2>",
            f'<p class="note">{escape(COMPARE_NOTE)}</p>',
            f'<div id="compare">{table(COMPARE_HEAD, compare_rows(runs))}</div>',
            "<h3>Headline and invalid-action rate, paired</h3>",
            f'<p class="note">{escape(PAIRED_NOTE)}</p>',
            f'<div id="paired">{table(PAIRED_HEAD, paired_rows(runs, report.envs))}</div>',
        ]
    groups = error_groups(runs)
    if groups:
        total = sum(len(rs) for *_, rs in groups)
        items = []
        for run, env, error, rs in groups:
            seeds = " ".join(
                f'<a href="{escape(report.links.get((run.label, *key_of(r)), ""))}">{r["seed"]}</a>'
                for r in rs
            )
            items.append(
                f"<li>{escape(run.label)} {escape(env)}, {len(rs)} episode(s): "
                f'<span class="err">{escape(error)}</span><br>seeds: {seeds}</li>'
            )
        body += [f"<h2>Agent errors ({total})</h2><ul>{''.join(items)}</ul>"]
    body.append("<h2>Episodes</h2>")
    for env in report.envs:
        for run in runs:
            rows = [episode_cells(report, run, r, md=False) for r in sorted_records(run, env)]
            if rows:
                s = run.summary[env]
                body.append(
                    f"<details><summary>{escape(run.env_label(env))} - {escape(run.label)}: "
                    f"{s['successes']}/{s['scored_episodes']} succeeded</summary>"
                    f"{table(episode_head(runs), rows, raw=True)}</details>"
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
