"""A training curve reads its normalised score against the band of the level trained on
(Megacity and Magnetic Field publish one band per level)."""

from __future__ import annotations

import pytest

from tests.conftest import play
from textenvs.evals.bands import band_for, load_bands, normalised
from textenvs.training import curve
from textenvs.training.rollouts import Rollout, Timing


@pytest.mark.parametrize("level", [0, 3, None])
def test_a_curve_row_scores_against_the_level_trained_on(level: int | None) -> None:
    result = play("megacity", "scripted", 0, **({} if level is None else {"level": level}))
    rollout = Rollout(result, prompt_ids=[1], completion_ids=[2], env_mask=[1], logprobs=[0.0])
    row = curve.row(
        step=1, env="megacity", level=level, rollouts=[rollout], rewards=[result.total_reward],
        logs={}, step_s=1.0, rollout_s=1.0, timing=Timing(),
    )  # fmt: skip
    band = band_for(load_bands(), "megacity", level)
    assert band is not None and band["level"] == (2 if level is None else level)
    assert row["normalised_score"] == normalised(float(result.success), band)
    assert row["normalised_score"] is not None
