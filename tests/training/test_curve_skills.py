"""A training curve carries the scenario's own skill metrics per step (from its scoring),
so a run on the return shows them beside the headline: Megacity's steps in violation and
districts standing at the end."""

from __future__ import annotations

import json

from tests.conftest import play
from textenvs.evals import skills
from textenvs.training import curve
from textenvs.training.rollouts import Rollout, Timing


def _rollout(agent: str, seed: int) -> Rollout:
    result = play("megacity", agent, seed)
    return Rollout(
        result, prompt_ids=[1], completion_ids=[2], env_mask=[1], logprobs=[0.0],
        skills=skills.measure("megacity", seed, result.to_dict()),
    )  # fmt: skip


def _violations(rollout: Rollout) -> int:
    """Steps whose reward charged a threshold penalty, counted from the events here."""
    return sum(
        any(
            e["type"] == "reward" and {"integrity_low", "air_low"} & set(e["terms"])
            for e in turn.events
        )
        for turn in rollout.result.turns
    )


def test_a_megacity_curve_row_carries_violation_steps_and_districts(tmp_path) -> None:
    rollouts = [_rollout("random", 0), _rollout("scripted", 0)]
    violations = [_violations(r) for r in rollouts]
    assert violations[0] > 0 and violations[1] < violations[0]  # the two differ
    values = curve.row(
        step=1, env="megacity", rollouts=rollouts, rewards=[r.reward for r in rollouts],
        logs={}, step_s=1.0, rollout_s=1.0, timing=Timing(),
    )  # fmt: skip
    assert values["skill_violation_steps"] == sum(violations) / 2
    assert values["skill_districts_at_end"] is not None
    curve.append(tmp_path, values)
    curve.append(tmp_path, values | {"step": 2})
    rows = curve.read(tmp_path)
    assert [r["step"] for r in rows] == [1.0, 2.0]
    assert rows[1]["skill_violation_steps"] == sum(violations) / 2
    assert rows[1]["skill_districts_at_end"] == values["skill_districts_at_end"]


def test_each_steps_episodes_are_logged_and_a_resume_drops_the_later_ones(tmp_path) -> None:
    rollouts = [_rollout("random", 0), _rollout("scripted", 0)]
    for step in (1, 2, 3):
        curve.append_rollouts(tmp_path, step, rollouts)
        curve.append(tmp_path, {"step": step, "episodes": 2})
    curve.keep_until(tmp_path, 2)
    lines = [json.loads(line) for line in (tmp_path / curve.ROLLOUTS).read_text().splitlines()]
    assert [line["step"] for line in lines] == [1, 1, 2, 2]
    assert [r["step"] for r in curve.read(tmp_path)] == [1.0, 2.0]
    scripted = lines[1]
    assert scripted["seed"] == 0 and scripted["return"] == rollouts[1].reward
    assert scripted["commands"] == [t.read_as for t in rollouts[1].result.turns]
    assert scripted["commands"][0] == "scan"  # the planner charts the seams first
    assert scripted["skills"]["violation_steps"] == _violations(rollouts[1])
    assert sum(scripted["rewards"]) == rollouts[1].reward
