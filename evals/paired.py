"""Paired differences between two runs on the episodes both played, with 95% bootstrap
intervals over seeds: the scenario's headline metric (and so its normalised score) and
the invalid-action rate. This is how a trained model is read against the model it
started from: same seeds, same harness, one difference per seed.

Seeds are resampled with replacement (as `bootstrap.seed_resamples` does); on each
resample the headline difference is the mean of the per-episode differences, and the
invalid-action difference is the difference of the two pooled rates (invalid commands /
steps), the rate the summary table shows.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Any

import numpy as np

from textenvs.episodes.protocol import AGENT_ERROR
from textenvs.evals import bootstrap
from textenvs.evals.bands import episode_headline
from textenvs.evals.metrics import Record, key_of
from textenvs.evals.report_rows import paired_label


def paired_differences(env: str, base: Iterable[Record], run: Iterable[Record]) -> dict[str, Any]:
    """The run's headline and invalid-action rate against the base run's, on the
    (env, seed, episode) keys both scored; None figures where there is nothing to pair."""
    a = {key_of(r): r for r in base if r["env"] == env and r["outcome"] != AGENT_ERROR}
    b = {key_of(r): r for r in run if r["env"] == env and r["outcome"] != AGENT_ERROR}
    keys = sorted(a.keys() & b.keys())
    out: dict[str, Any] = {"pairs": len(keys)}
    headlines = [
        (key[1], ha, hb)
        for key in keys
        if (ha := episode_headline(env, a[key])) is not None
        and (hb := episode_headline(env, b[key])) is not None
    ]
    if headlines:
        seeds = [seed for seed, _, _ in headlines]
        diffs = [hb - ha for _, ha, hb in headlines]
        out |= {
            "headline_base": float(np.mean([ha for _, ha, _ in headlines])),
            "headline_run": float(np.mean([hb for _, _, hb in headlines])),
            "headline_diff": float(np.mean(diffs)),
            "headline_ci": bootstrap.interval(bootstrap.seed_resamples(diffs, seeds, env)),
        }
    steps_a = [int(a[k]["steps"]) for k in keys]
    steps_b = [int(b[k]["steps"]) for k in keys]
    if keys and sum(steps_a) and sum(steps_b):
        invalid_a = [int(a[k]["invalid_actions"]) for k in keys]
        invalid_b = [int(b[k]["invalid_actions"]) for k in keys]
        rate_a, rate_b = sum(invalid_a) / sum(steps_a), sum(invalid_b) / sum(steps_b)
        samples = _rate_difference_resamples(
            [k[1] for k in keys], invalid_a, steps_a, invalid_b, steps_b, env
        )
        out |= {
            "invalid_base": rate_a,
            "invalid_run": rate_b,
            "invalid_diff": rate_b - rate_a,
            "invalid_ci": bootstrap.interval(samples),
        }
    return out


def _rate_difference_resamples(
    seeds: list[int],
    invalid_a: list[int],
    steps_a: list[int],
    invalid_b: list[int],
    steps_b: list[int],
    env: str,
) -> np.ndarray:
    """Pooled rate of run b minus run a on each resample of the seeds."""
    order = sorted(set(seeds))
    place = {seed: i for i, seed in enumerate(order)}
    sums = np.zeros((4, len(order)))
    for i, seed in enumerate(seeds):
        sums[:, place[seed]] += (invalid_a[i], steps_a[i], invalid_b[i], steps_b[i])
    rng = np.random.default_rng([bootstrap.SEED, zlib.crc32(env.encode()), 1])
    picks = rng.integers(0, len(order), size=(bootstrap.RESAMPLES, len(order)))
    picked = sums[:, picks].sum(axis=2)  # (4, resamples)
    with np.errstate(invalid="ignore", divide="ignore"):
        difference = picked[2] / picked[3] - picked[0] / picked[1]
    return difference[np.isfinite(difference)]


# ----- the report's table ---------------------------------------------------------------

PAIRED_HEAD = ["env", "run vs baseline", "pairs", "headline (base → run)",
               "Δ headline [95% CI]", "invalid (base → run)", "Δ invalid [95% CI]"]  # fmt: skip
PAIRED_NOTE = (
    "Per scenario, on the episodes both runs scored: the headline metric (the one the "
    "normalised score is read from) and the invalid-action rate, each run's figure and the "
    "run minus the baseline with a 95% bootstrap interval over seeds (paired: both runs' "
    "episodes of a seed are resampled together). An interval that excludes 0 is a "
    "difference the seeds make clear."
)


def paired_rows(runs: list[Any], envs: list[str]) -> list[list[str]]:
    """A row per scenario and run against the first run (the baseline)."""
    base = runs[0]
    rows = []
    for run in runs[1:]:
        for env in envs:
            d = paired_differences(env, base.records, run.records)
            if not d["pairs"]:
                continue
            rows.append(
                [
                    paired_label(env, base, run),  # names the levels when they differ
                    f"{run.label} vs {base.label}",
                    str(d["pairs"]),
                    _arrow(d.get("headline_base"), d.get("headline_run"), ".3f"),
                    _difference(d.get("headline_diff"), d.get("headline_ci"), ".3f"),
                    _arrow(d.get("invalid_base"), d.get("invalid_run"), ".1%"),
                    _difference(d.get("invalid_diff"), d.get("invalid_ci"), ".1%"),
                ]
            )
    return rows


def _arrow(before: float | None, after: float | None, spec: str) -> str:
    if before is None or after is None:
        return "n/a"
    return f"{before:{spec}} → {after:{spec}}"


def _difference(value: float | None, ci: list[float] | None, spec: str) -> str:
    if value is None:
        return "n/a"
    interval = f" [{ci[0]:+{spec}}, {ci[1]:+{spec}}]" if ci else ""
    return f"{value:+{spec}}{interval}"
