"""The rows, cells and notes of the report tables, shared by the Markdown and HTML pages
(`report_md`, `report_html`) and the results files."""

from __future__ import annotations

from html import escape
from typing import Any

from textenvs.episodes.protocol import AGENT_ERROR
from textenvs.evals.bands import band_warnings, headline, scenario_label
from textenvs.evals.metrics import Record, compare, key_of
from textenvs.evals.report_data import Report, Run, env_order
from textenvs.evals.skills import format_value, label

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
SCORE_HEAD = ["env", "run", "headline metric", "result (95% CI)", "random", "scripted",
              "ceiling", "normalised (95% CI)"]  # fmt: skip
SUMMARY_HEAD = ["env", "run", "episodes", "successes", "success", "95% CI", "return ± se",
                "steps", "invalid", "agent errors"]  # fmt: skip
TOKEN_HEAD = ["tokens/ep", "prompt/ep (cached)", "cacheable"]
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
EPISODE_HEAD = ["seed", "ep", "outcome", "return", "steps", "invalid", "transcript"]


def counts_tokens(runs: list[Run]) -> bool:
    """Whether any run recorded tokens (an llm agent): else no token columns at all."""
    return any(run.summary["all"]["tokens"].get("total", 0) for run in runs)


def priced(runs: list[Run]) -> bool:
    """Whether any run with token counts was given prices: else no cost column."""
    return any(run.summary["all"]["cost"] is not None and counts_tokens([run]) for run in runs)


def summary_head(runs: list[Run]) -> list[str]:
    return [*SUMMARY_HEAD, *(TOKEN_HEAD if counts_tokens(runs) else []),
            *(["cost/ep"] if priced(runs) else [])]  # fmt: skip


def episode_head(runs: list[Run]) -> list[str]:
    tokens = ["tokens"] if counts_tokens(runs) else []
    return [*EPISODE_HEAD[:-1], *tokens, EPISODE_HEAD[-1]]


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
                ", ".join(f"{env} {describe(run, env)}" for env in run.versions),
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


def with_ci(value: float | None, interval: list[float] | None) -> str:
    """`0.800 [0.650, 0.940]`; the bare value when the interval is a point or missing."""
    if value is None or not interval or interval[0] == interval[1]:
        return num(value)
    return f"{num(value)} [{num(interval[0])}, {num(interval[1])}]"


def score_rows(report: Report) -> list[list[str]]:
    rows = []
    for env in report.envs:
        for run in report.runs:
            if env in run.summary:
                s = run.summary[env]
                result = (
                    with_ci(s["headline"], s["success_ci95"])
                    if headline(env).field == "success_rate"
                    else with_ci(s["headline"], s.get("headline_ci95"))
                )
                rows.append(
                    [run.env_label(env), run.label, headline(env).label, result,
                     *band_cells(report.band(env, run)),
                     with_ci(s["normalised"], s.get("normalised_ci95"))]
                )  # fmt: skip
    for run in report.runs:
        s = run.summary["all"]
        rows.append(["all", run.label, "mean normalised score", "", "", "", "",
                     with_ci(s["normalised"], s.get("normalised_ci95"))])  # fmt: skip
    return rows


def summary_row(s: Record, tokens: bool, cost: bool, run_tokens: bool) -> list[str]:
    """The cells of one summary row; the token cells only when `tokens` (shown as "-"
    for a run without token counts), the cost only when `cost`."""
    n = max(1, s["episodes"])
    row = [
        str(s["episodes"]),
        f"{s['successes']}/{s['scored_episodes']}",
        pct(s["success_rate"]),
        ci(s),
        plus_minus(s["mean_return"], s["return_stderr"]),
        num(s["mean_steps"], ".1f"),
        pct(s["invalid_action_rate"]),
        str(s["agent_errors"]),
    ]
    if tokens:
        row += (
            [
                f"{s['tokens_per_episode']:.0f}",
                f"{s['tokens'].get('prompt', 0) / n:.0f} ({s['tokens'].get('cached', 0) / n:.0f})",
                pct(s.get("cacheable_share")),
            ]
            if run_tokens
            else ["-"] * len(TOKEN_HEAD)
        )
    if cost:
        cost_per_episode = s["cost_per_episode"] if run_tokens else None
        row.append("-" if cost_per_episode is None else f"${cost_per_episode:.4f}")
    return row


def summary_rows(runs: list[Run]) -> list[list[str]]:
    tokens, cost = counts_tokens(runs), priced(runs)
    rows = []
    for env in [*env_order(runs), "all"]:
        for run in runs:
            if env in run.summary:
                own = counts_tokens([run])
                name = run.env_label(env) if env != "all" else env
                rows.append([name, run.label, *summary_row(run.summary[env], tokens, cost, own)])
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
                format_value(env, field, run.summary[env]["skills"].get(field))
                if env in run.summary
                else NA
                for run in runs
            ]
            rows.append([env, label(env, field), *cells])
    return rows


def pass_rows(runs: list[Run]) -> list[list[str]]:
    rows = []
    for env in env_order(runs):
        for run in runs:
            s = run.summary.get(env, {})
            for k, value in s.get("pass@k", {}).items():
                rows.append([run.env_label(env), run.label, k, pct(value), pct(s["pass^k"][k])])
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
                    env if env == "all" else paired_label(env, base, run),
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


def paired_label(env: str, base: Run, run: Run) -> str:
    """The scenario of a paired row: `megacity (level 2 vs 3)` when the runs' levels
    differ."""
    a, b = base.levels.get(env), run.levels.get(env)
    return scenario_label(env, a) if a == b else f"{env} (level {a} vs {b})"


def warnings(report: Report) -> list[str]:
    """What makes the figures hard to compare: bands missing or of another version than
    the run's scenario at the level it played, episodes of mixed levels, runs that played
    a scenario at another version or level than the first run, different scenario or seed
    sets between runs."""
    out = []
    for run in report.runs:
        out += band_warnings(report.bands, run.label, run.versions, run.levels)
        for env, s in run.summary.items():
            if s.get("levels"):
                mixed = ", ".join(map(str, s["levels"]))
                out.append(f"{run.label}: {env} mixes levels {mixed}: no normalised score")
    base = report.runs[0]
    for run in report.runs[1:]:
        for env in [env for env in base.versions if env in run.versions]:
            played = {(r.versions[env], r.levels.get(env)) for r in (base, run)}
            if len(played) > 1:
                out.append(
                    f"{run.label} and {base.label} played {env} differently "
                    f"({describe(base, env)} vs {describe(run, env)}): their figures and "
                    "the paired comparison set different worlds side by side"
                )
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


def describe(run: Run, env: str) -> str:
    """`v4 level 2`: the version and level a run played a scenario at."""
    level = run.levels.get(env)
    return f"v{run.versions[env]}" + ("" if level is None else f" level {level}")


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
        *([str((r.get("tokens") or {}).get("total", 0))] if counts_tokens(report.runs) else []),
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
                    run.env_label(env),
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
    "the 'all' row averages normalised scores. Success CIs are 95% Wilson intervals; the "
    "other intervals in [brackets] are 95% bootstrap intervals over seeds (2,000 resamples, "
    "fixed seed); ± is the standard error of the mean clustered by seed; invalid = invalid "
    "commands / steps. Agent errors are listed and kept out of every statistic."
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
