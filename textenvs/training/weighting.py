"""A policy gradient on a model's recorded episodes (`--method sft --demonstrations RUN
--reward-weighted`): every reply of an episode is trained on with the weight (advantage)
of its episode's success minus a baseline, each episode's weight shared among its turns
(`turn_weights`). Won episodes' replies are drawn up, lost ones' down, each token only
as long as its probability stays within `CLIP` (or `--clip`) of the probability it was
sampled at (PPO's clipped objective, as GRPO uses it): without that bound, pushing lost
replies down has no floor, and a first run at lr 3e-4 drove a step's loss to -8.8 within
7 steps and to +2.75 two steps later, a wrecked model.

The baseline: where the runs played a seed more than once (`textenvs eval
--episodes-per-seed K`), an episode is compared with the others on its seed (GRPO's group
baseline: a win counts where the same world was also lost, not where it is easy), and
seeds whose episodes all ended alike are left out. With one episode a seed, the runs'
mean success; lost episodes then far outnumber won ones at a checkpoint's 10-15%, so as
many lost as won are drawn (with the run's `rng_seed`), each weighing for all the lost:
the same expected gradient at a fraction of the sequences.

Where expert iteration (`--only-success`) moves only what won, this also moves away from
what lost: a command common to both is pushed up and down about equally and stays, what
won episodes did more often than lost ones grows.

With `--credit turn` the same credit is placed on the turns that earned it
(`seed_value_changes`): each turn weighs how much its command changed its seed's Monte
Carlo value, the share won among the seed's episodes that saw the same observation. Shared
by all of an episode's turns, a lost episode's good turns were pushed down with its bumps
(three rounds of episode credit moved the command mix, not the reading: docs/training.md).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from itertools import pairwise
from typing import NamedTuple

import torch

from textenvs.training.choices import CLIP
from textenvs.training.demonstrations import RecordedEpisode


def success_weighted(
    episodes: Sequence[RecordedEpisode], rng_seed: int
) -> tuple[list[RecordedEpisode], list[float]]:
    """The episodes trained on, in their recorded order, each with its weight: success
    minus its seed's mean where a seed was played more than once (`seed_relative`), else
    minus the runs' mean (`mean_relative`)."""
    won = sum(episode.success for episode in episodes)
    if won in (0, len(episodes)):
        ended = "won" if won else "lost"
        raise ValueError(
            f"--reward-weighted: every episode on the training seeds was {ended}, so success "
            "minus its mean is 0 for all; give runs with won and lost episodes"
        )
    seeds = {episode.spec.seed for episode in episodes}
    if len(seeds) < len(episodes):
        return seed_relative(episodes)
    return mean_relative(episodes, rng_seed)


def seed_groups(episodes: Sequence[RecordedEpisode]) -> list[list[int]]:
    """The places in `episodes` of each seed's episodes, a list a seed."""
    by_seed: dict[int, list[int]] = defaultdict(list)
    for at, episode in enumerate(episodes):
        by_seed[episode.spec.seed].append(at)
    return list(by_seed.values())


def require_observations(episodes: Sequence[RecordedEpisode], credit: str) -> None:
    """Refuse episodes recorded without each turn's observation: `--credit credit` values
    the observations."""
    for episode in episodes:
        if not episode.observations:
            raise ValueError(
                f"--credit {credit}: {episode.spec.id} was recorded without its observations"
            )


def seed_relative(
    episodes: Sequence[RecordedEpisode],
) -> tuple[list[RecordedEpisode], list[float]]:
    """The episodes of the seeds both won and lost, each weighing its success minus its
    seed's mean success."""
    weights: dict[int, float] = {}
    for group in seed_groups(episodes):
        mean = sum(episodes[at].success for at in group) / len(group)
        if 0 < mean < 1:
            weights.update({at: episodes[at].success - mean for at in group})
    if not weights:
        raise ValueError(
            "--reward-weighted: every seed played more than once was won every time or "
            "lost every time, so no episode beats its seed's mean; sample more episodes a "
            "seed (--episodes-per-seed) or more seeds"
        )
    chosen = sorted(weights)
    return [episodes[at] for at in chosen], [weights[at] for at in chosen]


def seed_value_changes(
    episodes: Sequence[RecordedEpisode],
) -> tuple[list[RecordedEpisode], list[list[float]]]:
    """The episodes of the seeds both won and lost with a weight for each turn: the change
    its command made in its seed's value. A seed's value of an observation is the share
    won among the seed's episodes that were shown it (the same world, step and report: the
    same state, for a memoryless policy); a turn weighs the value of the observation it
    led to minus the value of the one it answered, the last turn its episode's success
    minus that. Every episode of a seed opens on one observation, whose value is the
    seed's mean, so an episode's weights sum to its episode credit (`seed_relative`):
    the same credit, on the turns where the episode parted from episodes that ended
    otherwise. Past its last such turn an episode weighs nothing, and episodes with no
    weighed turn are left out."""
    require_observations(episodes, "turn")
    weights: dict[int, list[float]] = {}
    for group in seed_groups(episodes):
        shown: dict[str, list[bool]] = defaultdict(list)
        for at in group:
            for observation in set(episodes[at].observations):
                shown[observation].append(episodes[at].success)
        value = {observation: sum(ends) / len(ends) for observation, ends in shown.items()}
        for at in group:
            episode = episodes[at]
            values = [value[observation] for observation in episode.observations]
            changes = [after - before for before, after in pairwise([*values, episode.success])]
            if any(changes):
                weights[at] = changes
    if not weights:
        raise ValueError(
            "--credit turn: no seed was both won and lost, so no command changed a seed's "
            "value; sample more episodes a seed (--episodes-per-seed) or more seeds"
        )
    chosen = sorted(weights)
    return [episodes[at] for at in chosen], [weights[at] for at in chosen]


def mean_relative(
    episodes: Sequence[RecordedEpisode], rng_seed: int
) -> tuple[list[RecordedEpisode], list[float]]:
    """The won episodes and as many drawn lost ones, each with its weight: 1 - p for a
    won one, -p * lost / drawn for a lost one (p: the share won)."""
    won = [at for at, episode in enumerate(episodes) if episode.success]
    lost = [at for at, episode in enumerate(episodes) if not episode.success]
    share = len(won) / len(episodes)
    drawn = random.Random(rng_seed).sample(lost, min(len(won), len(lost)))
    lost_weight = -share * len(lost) / len(drawn)
    chosen = sorted([*won, *drawn])
    weights = [1 - share if episodes[at].success else lost_weight for at in chosen]
    return [episodes[at] for at in chosen], weights


class TrainedScores(NamedTuple):
    """A model's log-probabilities at one sequence's trained tokens: the trained token's
    own (`chosen`, one a token) and every token's in the vocabulary (`every`, a row a
    token)."""

    chosen: torch.Tensor
    every: torch.Tensor


def vocabulary_kl(reference: torch.Tensor, current: torch.Tensor) -> torch.Tensor:
    """KL(reference || current) over the whole vocabulary, averaged over the trained
    tokens (`TrainedScores.every` rows of each): the `--kl-penalty` term. The clip and the
    drift see only the trained tokens' own probabilities; a reply drawn up moves the others
    at states the credit says nothing about (docs/training.md, `runs/or6g`), and this pulls
    each trained state's whole distribution back towards the sampling policy's."""
    reference = reference.to(current.device)
    return (reference.exp() * (reference - current)).sum(-1).mean()


def clipped_policy_loss(
    logprobs: torch.Tensor, sampled: torch.Tensor, advantage: float, clip: float = CLIP
) -> torch.Tensor:
    """A loss whose gradient is PPO's clipped surrogate's for one sequence's trained
    tokens: -advantage * ratio * grad log p where the ratio of a token's probability to
    its sampled one is within `clip` on the side the advantage pushes it, 0 past it. Its
    value is the advantage times the tokens' mean cross-entropy, weighted by the ratios,
    so at the start (ratios 1) it is the weighted imitation loss."""
    ratio = (logprobs.detach() - sampled.to(logprobs.device)).exp()
    past = ratio > 1 + clip if advantage > 0 else ratio < 1 - clip
    return -(advantage * ratio * ~past * logprobs).mean()


class PolicyDrift:
    """How far the policy has moved from the one that sampled the trained tokens: the
    mean over an optimizer step's trained tokens of ratio - 1 - log ratio (an estimate of
    KL(sampling policy || current) that is never negative; PPO implementations' "approximate
    KL", which their target-KL early stop reads)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.tokens = 0

    def add(self, logprobs: torch.Tensor, sampled: torch.Tensor) -> None:
        log_ratio = logprobs.detach().double() - sampled.to(logprobs.device).double()
        self.total += float((log_ratio.exp() - 1 - log_ratio).sum())
        self.tokens += log_ratio.numel()

    def add_divergence(self, mean: float, tokens: int) -> None:
        """`tokens` tokens whose KL divergence is known exactly (over the vocabulary),
        `mean` on average."""
        self.total += mean * tokens
        self.tokens += tokens

    def take(self) -> float:
        """The mean since the last call (0 if no token was added), and start again."""
        mean = self.total / self.tokens if self.tokens else 0.0
        self.total, self.tokens = 0.0, 0
        return mean


def turn_weights(weights: Sequence[float], turns: Sequence[int]) -> list[list[float]]:
    """Each episode's weight shared among its `turns` trained turns, scaled so that a turn
    weighs its episode's weight on average over the runs: an episode counts once, however
    long. Summed over turns instead, lost episodes (which run to the step limit: 30 turns
    against a won one's 8-10) outweighed won ones 3.4 times at equal counts; every
    command but `mark` was pushed down, and the policy marked on its first turn."""
    mean = sum(turns) / len(turns)
    shared = zip(weights, turns, strict=True)
    return [[weight * mean / count for _ in range(count)] for weight, count in shared]
