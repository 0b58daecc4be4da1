"""Scores over episode records: Wilson intervals, standard errors, per-env summaries and
the paired per-seed comparison of two runs.

An episode record is one line of `episodes.jsonl` (see `textenvs.evals.store`).
Episodes that ended in `agent_error` are not a measurement of the agent on the scenario
(the API failed, the agent crashed): they are counted and shown, but kept out of the
success rate, the return and the step statistics.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from textenvs.core.registry import episode_level
from textenvs.episodes.protocol import AGENT_ERROR
from textenvs.evals import bootstrap
from textenvs.evals.bands import band_for, episode_headline, headline_value, load_bands, normalised
from textenvs.evals.skills import aggregate

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal

Record = dict[str, Any]
Key = tuple[str, int, int]  # (env, seed, episode)


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion ((0, 1) when n is 0)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # The bounds at 0/n and n/n are exactly 0 and 1; avoid float noise there.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (lo, hi)


def mean(values: Sequence[float]) -> float:
    """Exactly summed, so the episodes' order (completion order under concurrency) never
    changes a printed figure (Megacity's 100 scripted returns sum to a mean of 103.455,
    which plain summation printed as 103.45 or 103.46 by order)."""
    return math.fsum(values) / len(values) if values else 0.0


def stderr(values: Sequence[float]) -> float:
    """Standard error of the mean (sample standard deviation / sqrt(n)); 0 below n=2."""
    n = len(values)
    if n < 2:
        return 0.0
    m = mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1) / n)


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test p-value: ties dropped, H0 says wins ~ Binomial(n, 1/2).

    For paired success/failure this is the exact McNemar test on the discordant pairs.
    """
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def key_of(record: Record) -> Key:
    return (str(record["env"]), int(record["seed"]), int(record.get("episode", 0)))


def tokens(record: Record) -> dict[str, int]:
    return {k: int(v) for k, v in (record.get("tokens") or {}).items()}


def cost(record: Record, prices: dict[str, float] | None) -> float | None:
    """Dollar cost of one episode from per-1k-token prices (None without prices)."""
    if not prices:
        return None
    t = tokens(record)
    return (
        t.get("prompt", 0) * prices.get("prompt_per_1k", 0.0)
        + t.get("completion", 0) * prices.get("completion_per_1k", 0.0)
    ) / 1000


def clustered_stderr(values: Sequence[float], clusters: Sequence[Any]) -> float | None:
    """Standard error of the mean with episodes clustered by seed (episodes of one seed
    share its world, so they are not independent): the cluster-robust (CR1) estimate
    sqrt(G / (G - 1) * sum_g (sum_i (x_gi - mean))^2) / n. With one episode per seed it
    equals `stderr`. None below two clusters."""
    groups = set(clusters)
    n = len(values)
    if len(groups) < 2:
        return None
    m = mean(values)
    sums: dict[Any, float] = {}
    for v, c in zip(values, clusters, strict=True):
        sums[c] = sums.get(c, 0.0) + (v - m)
    g = len(groups)
    return math.sqrt(g / (g - 1) * sum(x * x for x in sums.values())) / n


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k episodes drawn from n (c successes) succeeds."""
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: chance that all k episodes drawn from n (c successes) succeed."""
    return math.comb(c, k) / math.comb(n, k)


def pass_k(records: Sequence[Record]) -> dict[str, dict[str, float]]:
    """pass@k and pass^k for k = 1 .. the fewest scored episodes any seed has, averaged
    over seeds (unbiased estimators from n episodes per seed); {} with one per seed."""
    per_seed: dict[tuple[str, int], list[bool]] = {}
    for r in records:
        per_seed.setdefault((str(r["env"]), int(r["seed"])), []).append(bool(r["success"]))
    if not per_seed:
        return {}
    n_min = min(len(v) for v in per_seed.values())
    if n_min < 2:
        return {}
    out: dict[str, dict[str, float]] = {"pass@k": {}, "pass^k": {}}
    for k in range(1, n_min + 1):
        out["pass@k"][str(k)] = mean([pass_at_k(len(v), sum(v), k) for v in per_seed.values()])
        out["pass^k"][str(k)] = mean([pass_hat_k(len(v), sum(v), k) for v in per_seed.values()])
    return out


def summarize(records: Iterable[Record], prices: dict[str, float] | None = None) -> Record:
    """Per-env statistics (the `summary.json` shape) for a group of episode records.

    Figures that need a scored episode are None without one (shown as n/a). Standard
    errors are clustered by seed. Over several scenarios (the "all" group) returns and
    steps are not averaged: they have different scales.
    """
    records = list(records)
    scored = [r for r in records if r["outcome"] != AGENT_ERROR]
    envs = {r["env"] for r in records}
    one_env = len(envs) == 1
    successes = sum(1 for r in scored if r["success"])
    returns = [float(r["return"]) for r in scored]
    steps = [int(r["steps"]) for r in scored]
    clusters = [(r["env"], r["seed"]) for r in scored]
    invalid = sum(int(r["invalid_actions"]) for r in scored)
    token_totals: Counter[str] = Counter()
    for r in records:
        token_totals.update(tokens(r))
    costs = [c for r in records if (c := cost(r, prices)) is not None]
    n = len(records)
    some = bool(scored)
    return {
        "episodes": n,
        "scored_episodes": len(scored),
        "successes": successes,
        "success_rate": successes / len(scored) if some else None,
        "success_ci95": list(wilson(successes, len(scored))) if some else None,
        "mean_return": mean(returns) if some and one_env else None,
        "return_stderr": clustered_stderr(returns, clusters) if one_env else None,
        "mean_steps": mean(steps) if some and one_env else None,
        "steps_stderr": clustered_stderr(steps, clusters) if one_env else None,
        "seeds": len({c for c in clusters}),
        **pass_k(scored),
        "invalid_actions": invalid,
        "invalid_action_rate": invalid / sum(steps) if sum(steps) else None,
        "reasks": sum(int(r.get("reasks", 0)) for r in records),
        "agent_errors": n - len(scored),
        "outcomes": dict(sorted(Counter(r["outcome"] for r in records).items())),
        "tokens": dict(sorted(token_totals.items())),
        "tokens_per_episode": token_totals.get("total", 0) / n if n else 0.0,
        "cost": sum(costs) if costs else None,
        "cost_per_episode": sum(costs) / n if costs and n else None,
        "mean_latency_s": mean([float(r.get("latency_s", 0.0)) for r in records]),
        "skills": aggregate(next(iter(envs)), scored) if one_env else {},
        "cacheable_share": cacheable_share(records),
    }


def cacheable_share(records: Iterable[Record]) -> float | None:
    """Share of the prompt characters sent that repeat the start of the episode's previous
    request (what a server's prefix cache can reuse); None without llm-agent prompts."""
    caches = [r["prompt_cache"] for r in records if r.get("prompt_cache")]
    sent = sum(int(c["prompt_chars"]) for c in caches)
    return sum(int(c["prefix_chars"]) for c in caches) / sent if sent else None


def summarize_by_env(
    records: Iterable[Record],
    prices: dict[str, float] | None = None,
    bands: dict[str, Any] | None = None,
    env_options: dict[str, Any] | None = None,
) -> dict[str, Record]:
    """`{env: summary}` in first-seen order, plus `"all"` over every env. Each env gets
    its `level` (for a scenario with levels; `levels` lists them when its episodes mix
    levels), its `headline` metric and `normalised` score against the reference band of
    that level (from `bands`, by default the shipped ones; none for mixed levels), each
    with a 95% bootstrap interval over seeds (`headline_ci95`, `normalised_ci95`; see
    `textenvs.evals.bootstrap`). A record without a level (written before levels were
    recorded) played the level its run's `env_options` chose. "all" gets the mean of the
    normalised scores (None unless every env has one) and its interval, instead of
    pooled returns."""
    bands = load_bands() if bands is None else bands
    records = list(records)
    groups: dict[str, list[Record]] = {}
    for r in records:
        groups.setdefault(r["env"], []).append(r)
    out = {env: summarize(rs, prices) for env, rs in groups.items()}
    resampled = []  # per env: its normalised score on each bootstrap resample
    for env, s in out.items():
        levels = sorted({level_of(r, env_options) for r in groups[env]}, key=str)
        band = None
        if len(levels) == 1:
            band = band_for(bands, env, levels[0])
            if levels[0] is not None:
                s["level"] = levels[0]
        else:  # a mixed group has no one band to be read against
            s["level"], s["levels"] = None, levels
        s["headline"] = headline_value(env, s)
        s["normalised"] = normalised(s["headline"], band)
        values, seeds = [], []
        for r in groups[env]:
            value = episode_headline(env, r) if r["outcome"] != AGENT_ERROR else None
            if value is not None:
                values.append(value)
                seeds.append(int(r["seed"]))
        means = bootstrap.seed_resamples(values, seeds, env)
        s["headline_ci95"] = bootstrap.interval(means)
        normalised_means = None if means is None else bootstrap.normalise(means, band)
        s["normalised_ci95"] = bootstrap.interval(normalised_means)
        resampled.append(normalised_means)
    scores = [s["normalised"] for s in out.values()]
    complete = bool(scores) and all(v is not None for v in scores)
    out["all"] = summarize(records, prices)
    out["all"]["headline"] = None
    out["all"]["normalised"] = mean(scores) if complete else None
    # Per resample, the mean over scenarios of their normalised scores.
    out["all"]["normalised_ci95"] = (
        bootstrap.interval(np.mean(resampled, axis=0))
        if complete and all(v is not None for v in resampled)
        else None
    )
    return out


def level_of(record: Record, env_options: dict[str, Any] | None = None) -> int | None:
    """The level an episode record played (None for a scenario without levels)."""
    if "level" in record:
        return record["level"]
    return episode_level(record["env"], env_options)


def compare(a: Iterable[Record], b: Iterable[Record]) -> Record:
    """Paired comparison of run B against run A on the (env, seed, episode) keys both ran.

    Success: exact McNemar (sign test on pairs where exactly one run succeeded).
    Return: exact sign test on the per-pair return differences (ties dropped), with the
    mean difference and its paired standard error. Pairs where either side is an
    `agent_error` are left out.
    """
    by_key_a = {key_of(r): r for r in a if r["outcome"] != AGENT_ERROR}
    by_key_b = {key_of(r): r for r in b if r["outcome"] != AGENT_ERROR}
    keys = sorted(by_key_a.keys() & by_key_b.keys())
    b_only = sum(1 for k in keys if by_key_b[k]["success"] and not by_key_a[k]["success"])
    a_only = sum(1 for k in keys if by_key_a[k]["success"] and not by_key_b[k]["success"])
    diffs = [float(by_key_b[k]["return"]) - float(by_key_a[k]["return"]) for k in keys]
    up = sum(1 for d in diffs if d > 0)
    down = sum(1 for d in diffs if d < 0)
    n = len(keys)
    rate_a = sum(1 for k in keys if by_key_a[k]["success"]) / n if n else 0.0
    rate_b = sum(1 for k in keys if by_key_b[k]["success"]) / n if n else 0.0
    return {
        "pairs": n,
        "success_rate_a": rate_a,
        "success_rate_b": rate_b,
        "success_diff": rate_b - rate_a,
        "b_only_success": b_only,
        "a_only_success": a_only,
        "success_p": sign_test(b_only, a_only),
        "mean_return_diff": mean(diffs),
        "return_diff_stderr": stderr(diffs),
        "return_up": up,
        "return_down": down,
        "return_p": sign_test(up, down),
    }
