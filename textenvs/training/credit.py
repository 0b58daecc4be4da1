"""Which recorded episodes a `--reward-weighted` (or imitation) run trains on, and the
weight of each sequence fed: an episode's credit shared among its turns (`--credit
episode`), or each turn's own (`--credit turn`: `weighting.seed_value_changes`; `--credit
critic`: `critic.critic_value_changes`, the run's turns drawn by their weight's size, and
`--credit critic-gains` of those that raised the value alone; `--credit lookahead`: the
turns the critic's lookahead relabels, `lookahead.lookahead_relabels`, drawn alike)."""

from __future__ import annotations

from typing import Any

from textenvs.training.critic import critic_value_changes, drawn_by_weight
from textenvs.training.demonstrations import Demonstration, RecordedEpisode
from textenvs.training.lookahead import ANCHOR_SHARE, anchor_draws, lookahead_relabels
from textenvs.training.settings import CRITIC_CREDITS, DRAWN_CREDITS, TrainSettings
from textenvs.training.weighting import seed_value_changes, success_weighted, turn_weights


def replayed_choice(
    settings: TrainSettings, recorded: list[RecordedEpisode]
) -> tuple[list[RecordedEpisode], list[float] | list[list[float]]]:
    """The `recorded` episodes trained on (those of the training seeds; won ones alone
    with `settings.only_success`), with their weights under `settings.reward_weighted`
    (else none): one an episode, or with `--credit turn|critic` one a turn."""
    seeds = set(settings.seeds)
    chosen = [
        episode
        for episode in recorded
        if episode.spec.seed in seeds and (episode.success or not settings.only_success)
    ]
    if settings.reward_weighted and settings.credit == "turn":
        return seed_value_changes(chosen)
    if settings.reward_weighted and settings.credit in CRITIC_CREDITS:
        return critic_value_changes(chosen)
    if settings.reward_weighted and settings.credit == "lookahead":
        return lookahead_relabels(chosen)
    if settings.reward_weighted:
        return success_weighted(chosen, settings.rng_seed)
    return chosen, []


def sequence_weights(
    weights: list[float] | list[list[float]], kept: list[Demonstration]
) -> list[float]:
    """Each sequence's weight: its turn's own (one a turn), or its episode's shared
    among the episode's sequences (`turn_weights`)."""
    if not weights or not isinstance(weights[0], list):
        shares = turn_weights(weights, [len(d.sequences) for d in kept])
        return [weight for share in shares for weight in share]
    for turns, demonstration in zip(weights, kept, strict=True):
        if len(turns) != len(demonstration.sequences):
            raise ValueError(
                f"--credit weighs each turn apart: {demonstration.spec.id} was "
                f"{len(demonstration.sequences)} sequences for its {len(turns)} turns "
                "(give --history K, so that a turn is a sequence, and leave --habit-share out)"
            )
    return [weight for turns in weights for weight in turns]


def drawing_weight(credit: str, weight: float) -> float:
    """The weight a turn is drawn by under a critic's `credit`: its own, or with
    `critic-gains` 0 where it lowered the value (nothing pushed down)."""
    return max(weight, 0.0) if credit == "critic-gains" else weight


def weighted_columns(
    settings: TrainSettings,
    columns: dict[str, list[Any]],
    weights: list[float] | list[list[float]],
    kept: list[Demonstration],
) -> dict[str, list[Any]]:
    """The dataset's columns (one row a sequence of `kept`) with each row's `weight`, and
    only the rows fed: with `--credit critic` the run's steps x seeds-per-step rows drawn
    by their weight's size (with `critic-gains` of the rows weighing more than 0 alone;
    `lookahead` weighs only the relabelled ones, and with `--kl-penalty` draws half the
    rows from the others as anchors), otherwise those whose weight is not 0."""
    columns = {**columns, "weight": sequence_weights(weights, kept)}
    if settings.credit in DRAWN_CREDITS:
        count = settings.steps * settings.seeds_per_step
        weighed = [drawing_weight(settings.credit, w) for w in columns["weight"]]
        anchors = 0
        if settings.credit == "lookahead" and settings.kl_penalty:
            anchors = round(count * ANCHOR_SHARE)
        drawn = drawn_by_weight(weighed, count - anchors, settings.rng_seed)
        drawn = sorted(drawn + anchor_draws(weighed, anchors, settings.rng_seed + 1))
        columns = {name: [column[at] for at, _ in drawn] for name, column in columns.items()}
        columns["weight"] = [weight for _, weight in drawn]
        return columns
    # a turn that changed no value (--credit turn) has no gradient: not fed at all
    moved = [at for at, weight in enumerate(columns["weight"]) if weight]
    return {name: [column[at] for at in moved] for name, column in columns.items()}
