"""The scorer and its metrics: per scenario, never pooled across scales.

Per episode the score holds `success` (0/1), `return`, `steps` and `invalid_actions`;
their metrics are grouped by scenario (Inspect's `grouped`), with a pooled "all" only
for the figures that share a scale (success, invalid commands). `scenario_scores`
reads the episode records the way `textenvs eval`'s summary does
(`evals.metrics.summarize_by_env`): each scenario's headline metric, its normalised
score against the reference band (`evals/bands.json`), its skill metrics, and for
"all" the mean of the normalised scores.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    grouped,
    mean,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from textenvs.adapters.inspect.solver import RESULT_KEY, fenced
from textenvs.episodes.record import EpisodeResult
from textenvs.evals.metrics import summarize_by_env

RECORD_KEY = "record"  # the episode record in each score's metadata


@metric
def scenario_scores() -> Metric:
    """`<scenario>_normalised`, `<scenario>_headline`, `<scenario>_<skill>` and, for a
    scenario with levels, `<scenario>_level` (the level played, whose band the normalised
    score is read against) for each scenario, and `all_normalised` (the mean over
    scenarios, as in `textenvs report`)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        records = [s.score.metadata[RECORD_KEY] for s in scores if s.score.metadata]
        out: dict[str, float] = {}
        for env, summary in summarize_by_env(records).items():
            figures = {"normalised": summary["normalised"], "headline": summary["headline"]}
            if summary.get("level") is not None:  # the level its band was read at
                figures["level"] = summary["level"]
            if env != "all":
                figures |= {name: value for name, value in summary["skills"].items()}
            for name, value in figures.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    out[f"{env}_{name}"] = float(value)
        return out

    return compute


@metric
def scenario_mean(pooled: bool = False) -> Metric:
    """The mean per scenario (`<scenario>`), and over every sample (`all`) if `pooled`."""
    return grouped(mean(), "env", all="samples" if pooled else False)


@metric
def scenario_stderr() -> Metric:
    """The standard error of the mean per scenario."""
    return grouped(stderr(), "env", all=False, name_template="{group_name}")


def episode_metrics() -> list[Metric | dict[str, list[Metric]]]:
    """Each score key by scenario (with its standard error), then `scenario_scores`.
    Only success and invalid commands, which share a scale, are pooled over scenarios."""
    pooled = {"success": True, "return": False, "steps": False, "invalid_actions": True}
    by_key = {key: [scenario_mean(pool), scenario_stderr()] for key, pool in pooled.items()}
    return [by_key, scenario_scores()]


@scorer(metrics=episode_metrics())
def episode_outcome() -> Scorer:
    """Success (0/1), return, steps and invalid commands of the episode the solver played;
    the answer is the outcome (`success`, `failure`, `timeout`, `invalid_limit`), the
    explanation ends with the final observation, and the metadata holds the episode
    record (skills included) the metrics read."""

    async def score(state: TaskState, target: Target) -> Score:
        data: dict[str, Any] | None = state.store.get(RESULT_KEY)
        if data is None:
            raise RuntimeError("no textenvs episode in this sample: use the play_episode solver")
        record = {k: v for k, v in data.items() if k != "final_observation"}
        result = EpisodeResult(
            env=record["env"],
            seed=record["seed"],
            agent=record["agent"],
            success=record["success"],
            outcome=record["outcome"],
            total_reward=record["return"],
            steps=record["steps"],
            invalid_actions=record["invalid_actions"],
        )
        explanation = (
            f"{result.outcome}: return {result.total_reward:g}, {result.steps} steps, "
            f"{result.invalid_actions} invalid commands\n\n{fenced(data['final_observation'])}"
        )
        return Score(
            value=result.scores(),
            answer=result.outcome,
            explanation=explanation,
            metadata={"outcome": result.outcome, "error": record["error"], RECORD_KEY: record},
        )

    return score
