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


def test_the_curve_chart_reads_like_the_report_charts(tmp_path) -> None:
    """Labelled series, the metric's name, the scenario's band, and an axis that shows a
    change of 0.084 -> 0.091 (not one from 0 that flattens it)."""
    import re

    for step, headline in enumerate([0.0838, 0.0908, 0.0907, 0.0887, 0.0909, 0.0909], 1):
        curve.append(tmp_path, {"step": step, "episodes": 8, "headline": headline})
    curve.write_charts(tmp_path, "treasure-hunt")
    svg = (tmp_path / "figures" / "curve-headline.svg").read_text()
    texts = re.findall(r">([^<>]+)</text>", svg)
    assert "treasure-hunt: expected success of the exploration by step" in texts
    assert {"each step", "last 5 mean", "step", "expected success of the exploration"} <= set(texts)
    band = band_for(load_bands(), "treasure-hunt")
    assert {f"{key} {band[key]:.3g}" for key in ("random", "scripted", "ceiling")} <= set(texts)
    ticks = [float(t) for t in texts if re.fullmatch(r"0\.\d+", t)]
    assert min(ticks) > 0.06 and max(ticks) < 0.1  # spans the data and the band only
