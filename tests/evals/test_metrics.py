"""Metrics against values worked out by hand."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from textenvs.evals.metrics import (
    compare,
    mean,
    sign_test,
    stderr,
    summarize,
    summarize_by_env,
    wilson,
)
from textenvs.evals.plots import nice_ticks


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
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 37) == [0, 10, 20, 30, 40]


def test_clustered_stderr_by_hand() -> None:
    from textenvs.evals.metrics import clustered_stderr

    # One episode per seed: the ordinary standard error.
    assert clustered_stderr([1, 2, 3, 4], [0, 1, 2, 3]) == pytest.approx(stderr([1, 2, 3, 4]))
    # Seeds {0: 1, 1}, {1: 3, 3}: mean 2, cluster sums -2 and +2, G=2:
    # sqrt(2/1 * (4 + 4)) / 4 = 1.0 (the naive se would be sqrt(4/3)/2 = .577).
    assert clustered_stderr([1, 1, 3, 3], [0, 0, 1, 1]) == pytest.approx(1.0)
    assert clustered_stderr([1, 2], [0, 0]) is None


def test_pass_at_k_by_hand() -> None:
    from textenvs.evals.metrics import pass_at_k, pass_hat_k, pass_k

    # 4 episodes, 1 success: pass@2 = 1 - C(3,2)/C(4,2) = 1 - 3/6; pass^2 = 0.
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_hat_k(4, 1, 2) == 0.0
    # 4 episodes, 3 successes: pass^2 = C(3,2)/C(4,2) = 0.5; pass@2 = 1.
    assert pass_hat_k(4, 3, 2) == pytest.approx(0.5) and pass_at_k(4, 3, 2) == 1.0
    records = [rec("e", s, o, 0, 1) for s, o in [(0, "success"), (0, "failure"),
                                                  (1, "success"), (1, "success")]]  # fmt: skip
    out = pass_k(records)
    assert out["pass@k"] == {"1": pytest.approx(0.75), "2": pytest.approx(1.0)}
    assert out["pass^k"] == {"1": pytest.approx(0.75), "2": pytest.approx(0.5)}
    assert pass_k(records[:1]) == {}  # one episode per seed: nothing to add


def test_zero_scored_episodes_are_not_a_zero_rate() -> None:
    s = summarize([rec("a", 0, "agent_error", 0.0, 1)])
    assert s["success_rate"] is None and s["success_ci95"] is None and s["mean_return"] is None


def test_all_row_averages_normalised_scores_not_returns() -> None:
    bands = {"scenarios": {
        "a": {"version": "0", "random": 0.0, "scripted": 0.5, "ceiling": 1.0},
        "b": {"version": "0", "random": 0.2, "scripted": 0.4, "ceiling": 0.6},
    }}  # fmt: skip
    records = [rec("a", 0, "success", 1, 3), rec("a", 1, "failure", 0, 3),
               rec("b", 0, "success", 500.0, 5), rec("b", 1, "success", -20.0, 5)]  # fmt: skip
    by_env = summarize_by_env(records, bands=bands)
    assert by_env["a"]["normalised"] == pytest.approx(0.5)  # (.5 - 0) / (1 - 0)
    assert by_env["b"]["normalised"] == 1.0  # (1 - .2) / .4 = 2, clipped to 1
    assert by_env["all"]["normalised"] == pytest.approx(0.75)
    assert by_env["all"]["mean_return"] is None and by_env["all"]["return_stderr"] is None
    # A scenario without a band has no normalised score, and then neither has "all".
    assert summarize_by_env(records, bands={"scenarios": {}})["all"]["normalised"] is None


def test_normalised_is_clipped() -> None:
    from textenvs.evals.bands import normalised

    band = {"random": 0.1, "ceiling": 0.5}
    assert normalised(0.3, band) == pytest.approx(0.5)
    assert normalised(0.0, band) == 0.0 and normalised(0.9, band) == 1.0
    assert normalised(None, band) is None and normalised(0.3, None) is None


def test_treasure_curve_by_hand() -> None:
    from textenvs.scenarios.treasure_hunt.scoring import (
        expected_treasure_success,
        treasure_curve,
    )

    curve = treasure_curve()
    assert curve[0] == 0.0
    assert curve[1] == pytest.approx(1 / 63)  # the first new tile is the Bomb
    # Second tile: first Empty (52/63), then Bomb (1/62).
    assert curve[2] == pytest.approx(1 / 63 + 52 / 63 / 62)
    assert curve[63] == pytest.approx(1 / 11)  # Bomb before all ten Flowers
    assert expected_treasure_success(1.5) == pytest.approx((curve[1] + curve[2]) / 2)


def episode(turns: list[list[dict]], final: dict, outcome: str = "timeout") -> dict:
    return {
        "outcome": outcome,
        "turns": [{"events": events} for events in turns],
        "final_info_observation": final,
    }


def test_skill_measures_from_events_and_the_last_observation() -> None:
    from textenvs.evals.skills import measure

    new = [{"type": "reveal", "at": [1, 0], "icon": "empty"}, {"type": "move"}]
    own = [{"type": "reveal", "at": [1, 0], "icon": "empty", "own": True}]
    th = measure("treasure-hunt", 0, episode([new, own, new, new], {"steps_left": 26}))
    assert th["new_tiles"] == 3 and th["exploration"] == pytest.approx(0.75)
    # Ended on a Flower after 2 new tiles in 2 steps, 28 left: extended to 30 tiles.
    flower = episode([new, new], {"steps_left": 28}, outcome="failure")
    from textenvs.scenarios.treasure_hunt.scoring import TREASURE_OPTIMUM

    assert measure("treasure-hunt", 0, flower)["expected_success"] == pytest.approx(
        TREASURE_OPTIMUM
    )
    view = [[0, 0, 0], [0, 1, 0], [0, 0, 0]]
    em = measure("em-anomaly", 0, episode([[]], {"last_action": "mark", "view": view}))
    assert em == {"mark": "near"}
    assert measure("em-anomaly", 0, episode([[]], {"last_action": "north"})) == {"mark": None}
    low = [{"type": "reward", "terms": {"air_low": -3.0}}]
    fine = [{"type": "reward", "terms": {"steady": 1.0}}]
    mc = measure("megacity", 0, episode([low, fine, low], {"districts": 4}))
    assert mc == {"districts": 4, "violation_steps": 2}
    # A redesigned scenario without those fields reads n/a, never 0.
    assert measure("megacity", 0, episode([[]], {})) == {
        "districts": None,
        "violation_steps": None,
    }


def test_squad_recon_winnable_matches_the_seed_strengths() -> None:
    import textenvs
    from textenvs.scenarios.squad_recon.scoring import squad_recon_ceiling

    env = textenvs.make("squad-recon")
    for seed in range(20):
        env.reset(seed=seed)
        total = sum(s.strength for s in env._state.squads)
        camps = [c.strength for c in env._state.camps]
        expected = 1.0 if total > max(camps) else 0.5 if total > min(camps) else 0.0
        assert squad_recon_ceiling(seed) == expected


def test_bands_command_measures_and_records_provenance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    import textenvs
    from textenvs.evals.measure_bands import main
    from textenvs.scenarios.treasure_hunt.scoring import TREASURE_OPTIMUM

    out = tmp_path / "bands.json"
    out.write_text(json.dumps({"scenarios": {"em-anomaly": {"kept": True}}}))
    assert main(["--seeds", "0-3", "--env", "treasure-hunt", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["scenarios"]["em-anomaly"] == {"kept": True}  # not named: kept
    band = data["scenarios"]["treasure-hunt"]
    assert band["version"] == textenvs.get("treasure-hunt").load().version
    assert band["seeds"] == "0-3" and band["episodes"] == 4
    assert band["scripted"] == pytest.approx(TREASURE_OPTIMUM)  # the sweep is optimal
    assert band["ceiling"] == pytest.approx(TREASURE_OPTIMUM) and band["ceiling_kind"] == "exact"
    assert band["random"] < band["scripted"]
    assert "--seeds 0-3" in data["command"]
    assert main(["--seeds", "9-1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "bands: error: bad seed range" in err and "Traceback" not in err


def test_bootstrap_intervals_resample_seeds_deterministically() -> None:
    from textenvs.evals import bootstrap

    # Two episodes per seed that always agree: resampling seeds, not episodes, keeps
    # the pair together, so the interval is that of 10 seeds (wider than of 20 episodes).
    seeds = [s for s in range(10) for _ in range(2)]
    values = [float(s % 3 == 0) for s in seeds]
    means = bootstrap.seed_resamples(values, seeds, "em-anomaly")
    lo, hi = bootstrap.interval(means)
    assert lo < sum(values) / len(values) < hi
    assert set(np.round(means * 20) % 2) == {0.0}  # whole seeds: an even count of successes
    again = bootstrap.seed_resamples(values[::-1], seeds[::-1], "em-anomaly")
    assert bootstrap.interval(again) == [lo, hi]  # the order episodes finished in: no matter
    assert bootstrap.interval(bootstrap.seed_resamples([1.0] * 4, [0, 1, 2, 3], "x")) == [1, 1]
    band = {"random": 0.2, "ceiling": 0.6}
    assert list(bootstrap.normalise(np.array([0.1, 0.4, 0.9]), band)) == pytest.approx([0, 0.5, 1])
    assert bootstrap.seed_resamples([], [], "x") is None and bootstrap.interval(None) is None


def test_the_mean_does_not_depend_on_the_order_of_the_episodes() -> None:
    """Episodes are recorded in completion order under concurrency; a printed mean must
    not change with it (plain summation gives 0 or 1/3 here by order)."""
    values = [1e16, 1.0, -1e16, 0.1, 0.2]
    assert {mean(list(order)) for order in itertools.permutations(values)} == {1.3 / 5}
