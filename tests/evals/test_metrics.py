"""Metrics against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from textenvs.evals.metrics import compare, sign_test, stderr, summarize, summarize_by_env, wilson
from textenvs.evals.plots import nice_ticks, quantile


def test_wilson_by_hand() -> None:
    # 8/10: p=.8, z^2=3.8415, denom=1.38415, centre=.99207/1.38415=.71674,
    # half=1.95996*sqrt(.016+.0096037)/1.38415=.22658 -> (.49016, .94332)
    lo, hi = wilson(8, 10)
    assert lo == pytest.approx(0.49016, abs=1e-5)
    assert hi == pytest.approx(0.94332, abs=1e-5)
    # 0/10: centre = half = .19207/1.38415 -> (0, .27753); 10/10 mirrors it.
    assert wilson(0, 10) == (0.0, pytest.approx(0.27753, abs=1e-5))
    assert wilson(10, 10) == (pytest.approx(0.72247, abs=1e-5), 1.0)
    assert wilson(0, 0) == (0.0, 1.0)


def test_stderr_by_hand() -> None:
    # [1,2,3,4]: mean 2.5, squared deviations 5, sample var 5/3, se sqrt(5/3)/2
    assert stderr([1, 2, 3, 4]) == pytest.approx(math.sqrt(5 / 3) / 2)
    assert stderr([7.0]) == 0.0
    assert stderr([]) == 0.0


def test_sign_test_by_hand() -> None:
    assert sign_test(9, 1) == pytest.approx(22 / 1024)  # 2 * (C(10,0)+C(10,1)) / 2^10
    assert sign_test(1, 9) == pytest.approx(22 / 1024)
    assert sign_test(6, 0) == pytest.approx(2 / 64)
    assert sign_test(5, 5) == 1.0
    assert sign_test(0, 0) == 1.0
    assert sign_test(3, 2) == 1.0  # 2*(1+5+10)/32 = 1.0 exactly


def rec(env: str, seed: int, outcome: str, ret: float, steps: int, invalid: int = 0,
        prompt: int = 0, completion: int = 0) -> dict:  # fmt: skip
    return {
        "env": env,
        "seed": seed,
        "episode": 0,
        "outcome": outcome,
        "success": outcome == "success",
        "return": ret,
        "steps": steps,
        "invalid_actions": invalid,
        "reasks": 0,
        "tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion},
        "latency_s": 0.0,
    }


def test_summary_by_hand() -> None:
    records = [
        rec("a", 0, "success", 1.0, 4, invalid=1, prompt=1000, completion=100),
        rec("a", 1, "timeout", 0.0, 10, invalid=3, prompt=2000, completion=200),
        rec("a", 2, "invalid_limit", -1.0, 6, invalid=5, prompt=500, completion=50),
        rec("a", 3, "agent_error", 0.0, 2, invalid=0, prompt=100, completion=0),
    ]
    prices = {"prompt_per_1k": 0.5, "completion_per_1k": 2.0}
    s = summarize(records, prices)
    assert s["episodes"] == 4 and s["scored_episodes"] == 3 and s["agent_errors"] == 1
    assert s["successes"] == 1 and s["success_rate"] == pytest.approx(1 / 3)
    assert s["success_ci95"] == list(wilson(1, 3))
    assert s["mean_return"] == pytest.approx(0.0)  # (1 + 0 - 1) / 3
    assert s["return_stderr"] == pytest.approx(1 / math.sqrt(3))  # sample sd 1, n 3
    assert s["mean_steps"] == pytest.approx(20 / 3)
    assert s["invalid_action_rate"] == pytest.approx(9 / 20)  # scored episodes only
    assert s["tokens"] == {"completion": 350, "prompt": 3600, "total": 3950}
    assert s["tokens_per_episode"] == pytest.approx(3950 / 4)
    # cost: prompt 3600 * .5/1000 = 1.8, completion 350 * 2/1000 = .7
    assert s["cost"] == pytest.approx(2.5)
    assert s["cost_per_episode"] == pytest.approx(2.5 / 4)
    assert s["outcomes"] == {"agent_error": 1, "invalid_limit": 1, "success": 1, "timeout": 1}
    assert summarize(records)["cost"] is None


def test_summary_by_env_pools_all() -> None:
    records = [rec("a", 0, "success", 1, 3), rec("b", 0, "failure", 0, 5)]
    by_env = summarize_by_env(records)
    assert list(by_env) == ["a", "b", "all"]
    assert by_env["all"]["successes"] == 1 and by_env["all"]["episodes"] == 2


def test_paired_comparison_by_hand() -> None:
    outcomes_a = ["success", "success", "failure", "failure", "success", "agent_error"]
    outcomes_b = ["success", "failure", "success", "success", "success", "success"]
    a = [rec("e", i, o, 1.0 if o == "success" else 0.0, 5) for i, o in enumerate(outcomes_a)]
    b = [rec("e", i, o, 1.0 if o == "success" else 0.0, 5) for i, o in enumerate(outcomes_b)]
    b.append(rec("e", 99, "success", 1.0, 5))  # unpaired: ignored
    c = compare(a, b)
    assert c["pairs"] == 5  # seed 5 dropped (agent error in A), seed 99 unpaired
    assert (c["a_only_success"], c["b_only_success"]) == (1, 2)
    assert c["success_p"] == pytest.approx(1.0)  # 2 * (1 + 3) / 8 -> capped at 1
    assert c["success_rate_a"] == pytest.approx(3 / 5)
    assert c["success_rate_b"] == pytest.approx(4 / 5)
    # return differences: 0, -1, +1, +1, 0 -> mean .2, sd sqrt(.7), se sqrt(.7/5)
    assert c["mean_return_diff"] == pytest.approx(0.2)
    assert c["return_diff_stderr"] == pytest.approx(math.sqrt(0.7 / 5))
    assert (c["return_up"], c["return_down"]) == (2, 1)


def test_plot_helpers() -> None:
    assert quantile([1, 2, 3, 4], 0.5) == 2.5
    assert quantile([1, 2, 3, 4], 0.25) == 1.75  # position .75 between 1 and 2
    assert quantile([5], 0.9) == 5
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 37) == [0, 10, 20, 30, 40]
