"""`results.csv` (one row per run x scenario, every headline number) and `results.tex`
(a booktabs table a paper can `\\input`)."""

from __future__ import annotations

import csv
import io
from typing import Any

from textenvs.evals.bands import headline
from textenvs.evals.report_data import Report, Run
from textenvs.evals.report_rows import counts_tokens

CSV_FIXED = [
    "run", "directory", "agent", "model", "env", "version", "level", "band_version", "episodes",
    "scored_episodes", "seeds", "successes", "success_rate", "success_ci95_lo",
    "success_ci95_hi", "mean_return", "return_stderr", "mean_steps", "steps_stderr",
    "invalid_action_rate", "agent_errors", "headline_metric", "headline", "band_random",
    "headline_ci95_lo", "headline_ci95_hi", "band_scripted", "band_ceiling",
    "band_ceiling_kind", "normalised", "normalised_ci95_lo", "normalised_ci95_hi", "pass_at_k_k",
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
        band = (report.band(env, run) if env != "all" else None) or {}
        lo, hi = s["success_ci95"] or (None, None)
        k = max((int(k) for k in s.get("pass@k", {})), default=None)
        head_lo, head_hi = s.get("headline_ci95") or (None, None)
        norm_lo, norm_hi = s.get("normalised_ci95") or (None, None)
        tokens = s["tokens_per_episode"] if counts_tokens([run]) else None
        row: list[Any] = [
            run.label, str(run.path), run.config.get("agent", {}).get("name"),
            run.config.get("agent", {}).get("model"), env, run.versions.get(env),
            run.levels.get(env), band.get("version"), s["episodes"], s["scored_episodes"],
            s["seeds"],
            s["successes"], s["success_rate"], lo, hi, s["mean_return"], s["return_stderr"],
            s["mean_steps"], s["steps_stderr"], s["invalid_action_rate"], s["agent_errors"],
            headline(env).field if env != "all" else "mean_normalised", s["headline"],
            band.get("random"), head_lo, head_hi, band.get("scripted"), band.get("ceiling"),
            band.get("ceiling_kind"), s["normalised"], norm_lo, norm_hi, k,
            s["pass@k"][str(k)] if k else None, s["pass^k"][str(k)] if k else None,
            tokens, s["cost_per_episode"],
        ]  # fmt: skip
        row += [s.get("skills", {}).get(f) for f in skill_fields]
        writer.writerow(["" if v is None else v for v in row])
    return buffer.getvalue()


TEX_SPECIAL = {c: "\\" + c for c in "&%$#_{}"} | {"~": r"\textasciitilde{}", "^": r"\^{}"}


def tex(text: str) -> str:
    return "".join(TEX_SPECIAL.get(c, c) for c in text).replace("\\\\", r"\textbackslash{}")


def _tex_ci(value: float | None, interval: list[float] | None) -> str:
    if value is None:
        return "--"
    if not interval or interval[0] == interval[1]:
        return f"{value:.3f}"
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"


def render_tex(report: Report) -> str:
    """One row per scenario x run: success with its 95% Wilson CI, the headline metric
    (named) with its value, the normalised score with its 95% bootstrap CI over seeds;
    then the mean normalised score per run. Needs booktabs."""
    lines = [
        "% textenvs results table; needs \\usepackage{booktabs}",
        "% 95% CIs: Wilson for success rates; bootstrap over seeds for other headline values "
        "and for normalised scores",
        "\\begin{tabular}{lllrrr}",
        "\\toprule",
        "Scenario & Run & Headline metric & Value (95\\% CI) & Success \\% (95\\% CI) & "
        "Normalised (95\\% CI) \\\\",
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
        value = s["success_ci95"] if headline(env).field == "success_rate" else None
        lines.append(
            f"{tex(run.env_label(env))} & {tex(run.label)} & {tex(headline(env).label)} & "
            f"{_tex_ci(s['headline'], value or s.get('headline_ci95'))} & {success} & "
            f"{_tex_ci(s['normalised'], s.get('normalised_ci95'))} \\\\"
        )
    lines.append("\\midrule")
    for run in report.runs:
        s = run.summary["all"]
        score = _tex_ci(s["normalised"], s.get("normalised_ci95"))
        lines.append(f"all & {tex(run.label)} & mean normalised score & & & {score} \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", ""]
    return "\n".join(lines)
