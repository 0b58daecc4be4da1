"""Which recorded episodes a `--reward-weighted` (or imitation) run trains on, and the
weight of each sequence fed: an episode's credit shared among its turns (`--credit
episode`), or each turn's own (`--credit turn`: `weighting.seed_value_changes`; `--credit
critic`: `critic.critic_value_changes`, the run's turns drawn by their weight's size, and
`--credit critic-gains` of those that raised the value alone; `--credit lookahead`: the
turns the critic's lookahead relabels, `lookahead.lookahead_relabels`, drawn alike). With
anchors (`TrainSettings.anchored`), turns weighing 0 are fed beside them, for
`--kl-penalty`'s pull alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textenvs.training.choices import CRITIC_CREDITS, DRAWN_CREDITS
from textenvs.training.critic import critic_value_changes, drawn_by_weight
from textenvs.training.demonstrations import Demonstration, RecordedEpisode
from textenvs.training.lookahead import ANCHOR_SHARE, anchor_draws, lookahead_relabels
from textenvs.training.settings import TrainSettings
from textenvs.training.weighting import seed_value_changes, success_weighted, turn_weights


def replayed_choice(
    settings: TrainSettings,
    recorded: list[RecordedEpisode],
    on_relabelled: Callable[[int, int], Any] | None = None,
    relabels_kept_in: Path | None = None,
) -> tuple[list[RecordedEpisode], list[float] | list[list[float]]]:
    """The `recorded` episodes trained on (those of the training seeds; won ones alone
    with `settings.only_success`), with their weights under `settings.reward_weighted`
    (else none): one an episode, or with `--credit turn|critic|lookahead` one a turn
    (`on_relabelled`, `relabels_kept_in`: `lookahead_relabels`' progress and file)."""
    seeds = set(settings.seeds)
    chosen = [
        episode
        for episode in recorded
        if episode.spec.seed in seeds and (episode.success or not settings.only_success)
    ]
    if settings.reward_weighted and settings.credit == "turn":
        if not settings.anchored:
            return seed_value_changes(chosen)
        # --anchor-seeds' episodes are anchors alone: a turn of theirs weighs 0
        anchoring = set(settings.anchor_seeds)
        credited, weights = seed_value_changes(
            [episode for episode in chosen if episode.spec.seed not in anchoring]
        )
        anchors = [episode for episode in chosen if episode.spec.seed in anchoring]
        held = [[0.0] * len(episode.observations) for episode in anchors]
        return [*credited, *anchors], [*weights, *held]
    if settings.reward_weighted and settings.credit in CRITIC_CREDITS:
        return critic_value_changes(chosen)
    if settings.reward_weighted and settings.credit == "lookahead":
        return lookahead_relabels(chosen, on_relabelled, relabels_kept_in)
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
    per_turn_check([len(turns) for turns in weights], kept)
    return [weight for turns in weights for weight in turns]


def drawing_weight(credit: str, weight: float) -> float:
    """The weight a turn is drawn by under a critic's `credit`: its own, or with
    `critic-gains` 0 where it lowered the value (nothing pushed down)."""
    return max(weight, 0.0) if credit == "critic-gains" else weight


@dataclass(frozen=True)
class Draws:
    """The turns a drawn credit (`DRAWN_CREDITS`) or anchored turn credit feeds: each
    `(episode, turn, weight)`, the episode an index into the episodes fed, and how many
    turns each of those has."""

    turns: list[tuple[int, int, float]]
    lengths: list[int]


def fed_choice(
    settings: TrainSettings,
    episodes: list[RecordedEpisode],
    weights: list[float] | list[list[float]],
) -> tuple[list[RecordedEpisode], list[float] | list[list[float]] | Draws]:
    """`replayed_choice`'s episodes and weights as fed: with a drawn credit, the run's
    steps x seeds-per-step turns drawn by their weight's size (with `critic-gains` of the
    turns weighing more than 0 alone; `lookahead` with `--kl-penalty` draws half of them
    from the turns not relabelled, as anchors); `turn` with anchors, every credited turn
    and as many anchors drawn from `--anchor-seeds`' episodes; and only the episodes
    holding one, so that the others are never tokenized (thousands of random-play episodes
    for a few hundred draws); otherwise as they are."""
    drawn_turns = settings.credit in DRAWN_CREDITS
    if not (weights and (drawn_turns or settings.anchored)):
        return episodes, weights
    flat = [(at, turn) for at, turns in enumerate(weights) for turn in range(len(turns))]
    weighed = [drawing_weight(settings.credit, w) for turns in weights for w in turns]
    if drawn_turns:
        count = settings.steps * settings.seeds_per_step
        anchors = round(count * ANCHOR_SHARE) if settings.anchored else 0
        drawn = drawn_by_weight(weighed, count - anchors, settings.rng_seed)
    else:  # --credit turn: every turn that changed a value, once
        drawn = [(at, weight) for at, weight in enumerate(weighed) if weight]
        anchors = round(len(drawn) * ANCHOR_SHARE / (1 - ANCHOR_SHARE))
    anchored = set(settings.anchor_seeds)
    among = [episodes[at].spec.seed in anchored for at, _ in flat] if anchored else None
    drawn = sorted(drawn + anchor_draws(weighed, anchors, settings.rng_seed + 1, among))
    fed = sorted({flat[at][0] for at, _ in drawn})
    position = {at: number for number, at in enumerate(fed)}
    turns = [(position[flat[at][0]], flat[at][1], weight) for at, weight in drawn]
    lengths = [len(weights[at]) for at in fed]
    return [episodes[at] for at in fed], Draws(turns, lengths)


def per_turn_check(lengths: list[int], kept: list[Demonstration]) -> None:
    """Raise unless each demonstration is one sequence a turn (`lengths` its turns)."""
    for turns, demonstration in zip(lengths, kept, strict=True):
        if turns != len(demonstration.sequences):
            raise ValueError(
                f"--credit weighs each turn apart: {demonstration.spec.id} was "
                f"{len(demonstration.sequences)} sequences for its {turns} turns "
                "(give --history K, so that a turn is a sequence, and leave --habit-share out)"
            )


def weighted_columns(
    columns: dict[str, list[Any]],
    weights: list[float] | list[list[float]] | Draws,
    kept: list[Demonstration],
) -> dict[str, list[Any]]:
    """The dataset's columns (one row a sequence of `kept`) with each row's `weight`, and
    only the rows fed: the drawn turns (`fed_choice`), else those whose weight is not 0."""
    if isinstance(weights, Draws):
        per_turn_check(weights.lengths, kept)
        starts = [0]
        for demonstration in kept:
            starts.append(starts[-1] + len(demonstration.sequences))
        rows = [starts[at] + turn for at, turn, _ in weights.turns]
        columns = {name: [column[row] for row in rows] for name, column in columns.items()}
        return {**columns, "weight": [weight for _, _, weight in weights.turns]}
    columns = {**columns, "weight": sequence_weights(weights, kept)}
    # a turn that changed no value (--credit turn) has no gradient: not fed at all
    moved = [at for at, weight in enumerate(columns["weight"]) if weight]
    return {name: [column[at] for at in moved] for name, column in columns.items()}
