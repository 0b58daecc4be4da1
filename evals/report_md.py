"""The Markdown report (`report.md`): the same tables as the HTML page, no charts."""

from __future__ import annotations

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


def md_table(head: list[str], rows: list[list[str]]) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(report: Report) -> str:
    runs = report.runs
    parts = [
        "# textenvs eval report",
        f"Generated {report.generated}. {READING}",
        "## Runs",
        md_table(RUN_HEAD, run_rows(runs)),
    ]
    notes = warnings(report)
    if notes:
        parts += ["## Warnings", "\n".join(f"- {w}" for w in notes)]
    parts += [
        "## Scores against the reference bands",
        md_table(SCORE_HEAD, score_rows(report)),
        "## Results by scenario",
        md_table(summary_head(runs), summary_rows(runs)),
        "## Skill metrics",
        md_table(skill_head(runs), skill_rows(runs)),
    ]
    if pass_rows(runs):
        parts += [
            "## pass@k and pass^k",
            PASS_NOTE,
            md_table(PASS_HEAD, pass_rows(runs)),
        ]
    if learning_rows(runs):
        parts += ["## Learning curves", LEARNING_NOTE, md_table(LEARNING_HEAD, learning_rows(runs))]
    if len(runs) > 1:
        parts += [
            f"## Paired comparison against {runs[0].label}",
            COMPARE_NOTE,
            md_table(COMPARE_HEAD, compare_rows(runs)),
            "### Headline and invalid-action rate, paired",
            PAIRED_NOTE,
            md_table(PAIRED_HEAD, paired_rows(runs, report.envs)),
        ]
    groups = error_groups(runs)
    if groups:
        total = sum(len(rs) for *_, rs in groups)
        items = []
        for run, env, error, rs in groups:
            seeds = ", ".join(
                f"[{r['seed']}]({report.links.get((run.label, *key_of(r)), '')})" for r in rs
            )
            items.append(f"- {run.label} {env}, {len(rs)} episode(s): {error}  \n  seeds: {seeds}")
        parts += [f"## Agent errors ({total})", "\n".join(items)]
    parts.append("## Episodes")
    for env in report.envs:
        for run in runs:
            rows = [episode_cells(report, run, r, md=True) for r in sorted_records(run, env)]
            if rows:
                heading = f"### {run.env_label(env)} - {run.label}"
                parts += [heading, md_table(episode_head(runs), rows)]
    return "\n\n".join(parts) + "\n"
