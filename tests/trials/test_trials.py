"""Trial mode in the runner and the CLI, the learning-curve metrics, the learner agent
and the withheld-knowledge variants."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import textenvs
from textenvs.agents import make_agent
from textenvs.evals import run_folder, runner, store
from textenvs.evals.learning import learning_curves, slope
from textenvs.evals.plan import EvalPlan, build_config
from textenvs.evals.trials import check_trials, group_keys
from textenvs.scenarios.magnetic_field import rules as mf_rules
from textenvs.service import create_app, remote_env_factory
from textenvs.service.background import serve_in_thread

WITHHELD = {"withheld": True}


def evaluate(
    out: Path,
    env: str,
    agent: str,
    seeds: list[int],
    trials: int,
    *,
    concurrency: int = 4,
    make_env: Any = None,
    resume: bool = False,
) -> list[dict[str, Any]]:
    plan = EvalPlan(
        envs=[env], seeds=seeds, trials=trials, concurrency=concurrency, env_options=WITHHELD
    )
    factory = lambda: make_agent(agent)  # noqa: E731
    config = build_config(plan, factory(), agent_options={}, prices=None, seeds_spec="t")
    asyncio.run(runner.run_eval(plan, out, factory, config, make_env=make_env, resume=resume))
    return sorted(store.read_episodes(out), key=lambda r: r["seed"])


def by_trial(records: list[dict[str, Any]], field: str = "success") -> list[float]:
    trials = max(r["trial"] for r in records)
    return [
        sum(float(r[field]) for r in records if r["trial"] == t)
        / sum(1 for r in records if r["trial"] == t)
        for t in range(1, trials + 1)
    ]


def test_groups_are_consecutive_seeds_and_must_divide_the_seed_list() -> None:
    assert group_keys(["e"], [0, 1, 2, 3], 1, 2) == [[("e", 0, 0), ("e", 1, 0)],
                                                     [("e", 2, 0), ("e", 3, 0)]]  # fmt: skip
    check_trials(1000, 5)
    with pytest.raises(ValueError, match="multiple of 3"):
        check_trials(10, 3)


def test_the_learner_learns_magnetic_fields_rule_and_the_memoryless_does_not(
    tmp_path: Path,
) -> None:
    seeds = list(range(60))
    learner = evaluate(tmp_path / "learner", "magnetic-field", "learner", seeds, 3)
    assert [(r["trial"], r["trials"], r["group"]) for r in learner[:4]] == [
        (1, 3, 0), (2, 3, 0), (3, 3, 0), (1, 3, 3)
    ]  # fmt: skip
    scores = by_trial(learner, "return")
    assert scores[0] < 0.5 and scores[1] == scores[2] == 1.0  # one episode's end suffices
    memoryless = evaluate(tmp_path / "memoryless", "magnetic-field", "learner", seeds, 1)
    assert "trial" not in memoryless[0]
    assert sum(r["return"] for r in memoryless) / len(memoryless) < 0.5
    curve = learning_curves(learner)["magnetic-field"]
    assert curve["groups"] == 20 and curve["trials"] == 3
    assert curve["gain"]["success"]["ci95"][0] > 0.5
    summary = json.loads((tmp_path / "learner" / run_folder.SUMMARY).read_text())
    assert summary["learning"]["magnetic-field"]["by_trial"][2]["success_rate"] == 1.0


@pytest.mark.slow
def test_the_em_learner_rises_over_its_trials(tmp_path: Path) -> None:
    records = evaluate(tmp_path / "em", "em-anomaly", "learner", list(range(240)), 6)
    rates = by_trial(records)
    assert rates[0] < 0.15 and rates[-1] > 0.3 and rates[-1] > rates[0] + 0.2
    curve = learning_curves(records)["em-anomaly"]
    assert curve["slope"]["success"]["ci95"][0] > 0


@pytest.mark.slow
def test_trial_groups_are_the_same_under_concurrency_and_on_a_remote_env(
    tmp_path: Path,
) -> None:
    seeds = list(range(24))
    one = evaluate(tmp_path / "one", "em-anomaly", "learner", seeds, 4, concurrency=1)
    many = evaluate(tmp_path / "many", "em-anomaly", "learner", seeds, 4, concurrency=6)
    with serve_in_thread(create_app(idle_timeout=0)) as url:
        remote = evaluate(
            tmp_path / "remote", "em-anomaly", "learner", seeds, 4, make_env=remote_env_factory(url)
        )

    def outcome(records: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(r["seed"], r["trial"], r["outcome"], r["steps"]) for r in records]

    assert outcome(one) == outcome(many) == outcome(remote)


def test_learning_curve_metrics_on_known_groups() -> None:
    def record(group: int, trial: int, success: bool) -> dict[str, Any]:
        return {"env": "e", "seed": group + trial, "episode": 0, "group": group,
                "trial": trial, "trials": 3, "success": success, "return": float(success),
                "outcome": "success" if success else "failure"}  # fmt: skip

    outcomes = {0: (0, 1, 1), 10: (0, 0, 1), 20: (1, 1, 1), 30: (0, 1, 0)}
    records = [record(g, t + 1, bool(v)) for g, vs in outcomes.items() for t, v in enumerate(vs)]
    records += [record(40, 1, True)]  # an unfinished group: left out
    records += [{**record(50, t, True), "outcome": "agent_error"} for t in (1, 2, 3)]
    curve = learning_curves(records)["e"]
    assert curve["groups"] == 4
    assert [t["success_rate"] for t in curve["by_trial"]] == [0.25, 0.75, 0.75]
    assert slope([0, 1, 1]) == 0.5 and slope([0, 0, 1]) == 0.5 and slope([0, 1, 0]) == 0
    assert curve["slope"]["success"]["mean"] == pytest.approx((0.5 + 0.5 + 0 + 0) / 4)
    assert curve["gain"]["window"] == 1
    assert curve["gain"]["success"]["mean"] == pytest.approx(0.5)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "textenvs.cli", *args]


@pytest.mark.slow
def test_cli_errors_and_run_with_trials(tmp_path: Path) -> None:
    bad = subprocess.run(
        cli("eval", "--env", "magnetic-field", "--agent", "learner", "--seeds", "0-9",
            "--trials", "3", "--out", str(tmp_path / "x")),
        capture_output=True, text=True,
    )  # fmt: skip
    assert bad.returncode == 2 and "multiple of 3" in bad.stderr
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    bad = subprocess.run(
        cli("eval", "--env", "em-anomaly", "--env-option", "withheld=yes", "--agent",
            "random", "--out", str(tmp_path / "y")),
        capture_output=True, text=True,
    )  # fmt: skip
    assert bad.returncode == 2 and "withheld must be true or false" in bad.stderr
    played = subprocess.run(
        cli("run", "magnetic-field", "--agent", "learner", "--seed", "0", "--trials", "3",
            "--env-option", "withheld=true"),
        capture_output=True, text=True,
    )  # fmt: skip
    assert played.returncode == 0, played.stderr
    assert "=== end of trial 3 of 3 (seed 2) ===" in played.stdout
    assert "successes by trial: " in played.stdout


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_counts_every_group_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    episodes = out / run_folder.EPISODES
    args = cli("eval", "--env", "em-anomaly", "--env-option", "withheld=true", "--agent",
               "scripted", "--seeds", "0-31", "--trials", "4", "--concurrency", "3",
               "--out", str(out))  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while _lines(episodes) < 10 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    seen = store.read_episodes(out)
    assert 10 <= len(seen) < 32, "the run finished before it could be killed"
    done = subprocess.run([*args, "--resume"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    records = store.read_episodes(out)
    keys = [(r["seed"], r["episode"]) for r in records]
    assert len(keys) == len(set(keys)) == 32
    groups: dict[int, list[int]] = {}
    for r in records:
        groups.setdefault(r["group"], []).append(r["trial"])
    assert all(sorted(t) == [1, 2, 3, 4] for t in groups.values()) and len(groups) == 8
    # same outcomes as an uninterrupted run: a replayed group starts from its trial 1
    fresh = evaluate(tmp_path / "fresh", "em-anomaly", "scripted", list(range(32)), 4)
    assert sorted((r["seed"], r["outcome"], r["steps"]) for r in records) == [
        (r["seed"], r["outcome"], r["steps"]) for r in fresh
    ]


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


# ----- the withheld-knowledge variants ------------------------------------------------


@pytest.fixture(params=["magnetic-field", "em-anomaly", "megacity"])
def variant_env(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


def test_variants_keep_the_world_and_reject_bad_values(variant_env: str) -> None:
    env = textenvs.make(variant_env)
    text, info = env.reset(seed=5, options=WITHHELD)
    assert info["observation"]["withheld"] is True
    plain_text, plain = env.reset(seed=5)
    assert "withheld" not in plain and plain_text != text
    with pytest.raises(ValueError, match="withheld must be true or false"):
        env.reset(seed=5, options={"withheld": 1})


def test_magnetic_field_variant_shows_only_the_fixed_hints() -> None:
    env = textenvs.make("magnetic-field")
    for seed in range(20):
        level = seed % 4
        observation = env.reset(seed=seed, options={"withheld": True, "level": level})[1][
            "observation"
        ]
        assert [h["pattern"] for h in observation["hints"]] == ["00/00", "10/00", "11/01"]
        plain = env.reset(seed=seed, options={"level": level})[1]["observation"]
        assert plain["grid"] == observation["grid"]  # the same world, fewer hints
    assert len(mf_rules.WITHHELD_HINTS) == 3
    text = env.reset(seed=0, options=WITHHELD)[0]
    assert "how they are formed is not told" in text and "Bits 17-32 repeat" not in text


def test_em_variant_reveals_the_node_distance_at_the_end() -> None:
    env = textenvs.make("em-anomaly")
    text, _ = env.reset(seed=2, options=WITHHELD)
    assert "what the readings mean is not told" in text and "3 = on the" not in text
    text, *_, info = env.step("mark")
    node, position = env._state.node, env._state.position  # the test may look inside
    distance = abs(node[0] - position[0]) + abs(node[1] - position[1])
    assert info["observation"]["node_distance"] == distance
    assert f"The Vulnerability Node was {distance} steps" in text


def test_megacity_variant_shows_research_texts_only_at_the_end() -> None:
    env = textenvs.make("megacity")
    env.reset(seed=0, options=WITHHELD)
    env.step("research")
    text, *_, info = env.step("research")
    items = info["observation"]["research"]
    assert items[0]["status"] == "decoded" and all(item["text"] == "" for item in items)
    assert "Research texts are withheld" in text
    plain = textenvs.make("megacity")
    plain.reset(seed=0)
    plain.step("research")
    assert plain.step("research")[4]["observation"]["research"][0]["text"]
    for _ in range(38):
        text, _r, terminated, truncated, info = env.step("wait")
    assert terminated or truncated
    assert all(
        item["status"] == "decoded" and item["text"] for item in info["observation"]["research"]
    )
    assert "Every rule, as full research reveals it" in text
