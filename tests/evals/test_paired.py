"""Paired differences of the headline metric and the invalid-action rate between runs."""

from __future__ import annotations

import random

from textenvs.evals.paired import paired_differences, paired_rows


def record(seed: int, *, invalid: int, steps: int, expected: float, env="treasure-hunt") -> dict:
    return {
        "env": env,
        "seed": seed,
        "episode": 0,
        "outcome": "timeout",
        "success": False,
        "return": 0.0,
        "steps": steps,
        "invalid_actions": invalid,
        "skills": {"expected_success": expected},
    }


def runs(shift: float, invalid_after: int, seeds: int = 100):
    rng = random.Random(1)
    before, after = [], []
    for seed in range(seeds):
        value = rng.uniform(0.0, 0.05)
        before.append(record(seed, invalid=20, steps=30, expected=value))
        after.append(record(seed, invalid=invalid_after, steps=30, expected=value + shift))
    return before, after


def test_a_clear_improvement_has_an_interval_that_excludes_zero():
    before, after = runs(shift=0.02, invalid_after=5)
    d = paired_differences("treasure-hunt", before, after)
    assert d["pairs"] == 100
    assert abs(d["headline_diff"] - 0.02) < 1e-9
    lo, hi = d["headline_ci"]
    assert lo <= 0.02 <= hi and lo > 0
    assert abs(d["invalid_diff"] - (5 / 30 - 20 / 30)) < 1e-9
    assert d["invalid_ci"][1] < 0


def test_no_difference_is_zero_and_noise_straddles_zero():
    before, after = runs(shift=0.0, invalid_after=20)
    d = paired_differences("treasure-hunt", before, after)
    assert d["headline_diff"] == 0 and d["headline_ci"] == [0.0, 0.0]
    assert d["invalid_diff"] == 0
    rng = random.Random(2)
    noisy = [{**r, "skills": {"expected_success": rng.uniform(0, 0.05)}} for r in before]
    lo, hi = paired_differences("treasure-hunt", before, noisy)["headline_ci"]
    assert lo < 0 < hi


def test_only_episodes_both_runs_scored_are_paired():
    before, after = runs(shift=0.01, invalid_after=0, seeds=10)
    after = after[:6] + [{**r, "outcome": "agent_error"} for r in after[6:]]
    assert paired_differences("treasure-hunt", before, after)["pairs"] == 6
    assert paired_differences("em-anomaly", before, after) == {"pairs": 0}


def test_rows_name_each_run_against_the_baseline():
    class Run:
        def __init__(self, label, records):
            self.label, self.records, self.levels = label, records, {}

    before, after = runs(shift=0.02, invalid_after=5, seeds=20)
    (row,) = paired_rows([Run("base", before), Run("trained", after)], ["treasure-hunt"])
    assert row[:3] == ["treasure-hunt", "trained vs base", "20"]
    assert row[5] == "66.7% → 16.7%" and row[6].startswith("-50.0% [")
