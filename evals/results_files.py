"""`results.csv` (one row per run x scenario, every headline number) and `results.tex`
(a booktabs table a paper can `\\input`)."""

from __future__ import annotations

import csv
import io
from typing import Any

from textenvs.evals.bands import headline
from textenvs.evals.report import Report, Run

CSV_FIXED = [
    "run", "directory", "agent", "model", "env", "version", "band_version", "episodes",
    "scored_episodes", "seeds", "successes", "success_rate", "success_ci95_lo",
    "success_ci95_hi", "mean_return", "return_stderr", "mean_steps", "steps_stderr",
    "invalid_action_rate", "agent_errors", "headline_metric", "headline", "band_random",
    "band_scripted", "band_ceiling", "band_ceiling_kind", "normalised", "pass_at_k_k",
    "pass_at_k", "pass_hat_k", "tokens_per_episode", "cost_per_episode",
]  # fmt: skip


def _rows(report: Report) -> list[tuple[Run, str, dict[str, Any]]]:
    return [
        (run, env, run.summary[env])
        for run in report.runs
        for env in [*report.envs, "all"]
        if env in run.summary
    ]


def render_csv(report: Report) -> str:
    skill_fields: list[str] = []
    for _, _, s in _rows(report):
        skill_fields += [f for f in s.get("skills", {}) if f not in skill_fields]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIXED + [f"skill_{f}" for f in skill_fields])
    for run, env, s in _rows(report):
        band = report.band(env) or {}
        lo, hi = s["success_ci95"] or (None, None)
        k = max((int(k) for k in s.get("pass@k", {})), default=None)
        row: list[Any] = [
            run.label, str(run.path), run.config.get("agent", {}).get("name"),
            run.config.get("agent", {}).get("model"), env, run.versions.get(env),
            band.get("version"), s["episodes"], s["scored_episodes"], s["seeds"],
            s["successes"], s["success_rate"], lo, hi, s["mean_return"], s["return_stderr"],
            s["mean_steps"], s["steps_stderr"], s["invalid_action_rate"], s["agent_errors"],
            headline(env).field if env != "all" else "mean_normalised", s["headline"],
            band.get("random"), band.get("scripted"), band.get("ceiling"),
            band.get("ceiling_kind"), s["normalised"], k,
            s["pass@k"][str(k)] if k else None, s["pass^k"][str(k)] if k else None,
            s["tokens_per_episode"], s["cost_per_episode"],
        ]  # fmt: skip
        row += [s.get("skills", {}).get(f) for f in skill_fields]
        writer.writerow(["" if v is None else v for v in row])
    return buffer.getvalue()


TEX_SPECIAL = {c: "\\" + c for c in "&%$#_{}"} | {"~": r"\textasciitilde{}", "^": r"\^{}"}


def tex(text: str) -> str:
    return "".join(TEX_SPECIAL.get(c, c) for c in text).replace("\\\\", r"\textbackslash{}")


def _tex_num(value: float | None, spec: str) -> str:
    return "--" if value is None else format(value, spec)


def render_tex(report: Report) -> str:
    """One row per scenario x run: success with its 95% CI, the headline metric, the
    normalised score; then the mean normalised score per run. Needs booktabs."""
    lines = [
        "% textenvs results table; needs \\usepackage{booktabs}",
        "\\begin{tabular}{llrrr}",
        "\\toprule",
        "Scenario & Run & Success (95\\% CI) & Headline & Normalised \\\\",
        "\\midrule",
    ]
    for run, env, s in _rows(report):
        if env == "all":
            continue
        ci = s["success_ci95"]
        success = (
            "--"
            if ci is None
            else f"{s['success_rate'] * 100:.1f} ({ci[0] * 100:.1f}--{ci[1] * 100:.1f})"
        )
        lines.append(
            f"{tex(env)} & {tex(run.label)} & {success} & {_tex_num(s['headline'], '.3f')} & "
            f"{_tex_num(s['normalised'], '.3f')} \\\\"
        )
    lines.append("\\midrule")
    for run in report.runs:
        score = _tex_num(run.summary["all"]["normalised"], ".3f")
        lines.append(f"all (mean normalised) & {tex(run.label)} & & & {score} \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", ""]
    return "\n".join(lines)
