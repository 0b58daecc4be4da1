"""REINFORCE on a model's recorded episodes (`--method sft --demonstrations RUN
--reward-weighted`): every reply of an episode is trained on with the weight of its
episode's success minus the runs' mean success, the policy gradient of the success reward
with the batch mean as its baseline. Won episodes' replies are drawn up, lost ones' down.

Where expert iteration (`--only-success`) moves only what won, this also moves away from
what lost: a command common to both is pushed up and down about equally and stays, what
won episodes did more often than lost ones grows. Lost episodes far outnumber won ones at
a checkpoint's 10-15%, so as many lost as won are drawn (with the run's `rng_seed`), and
each weighs for all the lost: the same expected gradient at a fraction of the sequences.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from textenvs.training.demonstrations import RecordedEpisode


def success_weighted(
    episodes: Sequence[RecordedEpisode], rng_seed: int
) -> tuple[list[RecordedEpisode], list[float]]:
    """The won episodes and as many drawn lost ones, in their recorded order, each with
    its weight: 1 - p for a won one, -p * lost / drawn for a lost one (p: the share won)."""
    won = [at for at, episode in enumerate(episodes) if episode.success]
    lost = [at for at, episode in enumerate(episodes) if not episode.success]
    if not won or not lost:
        ended = "won" if won else "lost"
        raise ValueError(
            f"--reward-weighted: every episode on the training seeds was {ended}, so success "
            "minus its mean is 0 for all; give runs with won and lost episodes"
        )
    share = len(won) / len(episodes)
    drawn = random.Random(rng_seed).sample(lost, min(len(won), len(lost)))
    lost_weight = -share * len(lost) / len(drawn)
    chosen = sorted([*won, *drawn])
    weights = [1 - share if episodes[at].success else lost_weight for at in chosen]
    return [episodes[at] for at in chosen], weights
