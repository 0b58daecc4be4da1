"""Per-turn credit from a critic fit across seeds (`--reward-weighted --credit critic`).

`--credit turn` values an observation by the share won among one seed's episodes shown
that exact observation: a command earns credit only where episodes of its seed parted,
a few hundred turns a batch. A critic fit on every turn of every episode values what an
observation *says* instead: a logistic regression from the observation's words, each
word with its line's first word and its place on the line (so a scan cell's reading is a
feature of its own), but for the lines reporting the last command (the scenario's
`report_lines`), to the success of the episode that was shown it. Every turn then weighs
the change its command made in that value (one-step temporal difference, no discount:
the reward is the episode's success alone), the last turn its episode's success minus the
value of the observation it answered. An episode's weights still sum to its success minus
the value of its first observation: the scenario's reward, placed where the critic saw
it earned. Nothing but the runs' own success teaches the critic. (`--credit critic-gains`
feeds only the turns that raised the value: `credit.fed_choice`.)

A turn is valued by a critic fit on the other half of the seeds (two folds, seeds
alternating), so no episode's value is read from its own ending.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import pairwise

import torch

from textenvs.core import registry
from textenvs.training.demonstrations import RecordedEpisode
from textenvs.training.weighting import require_observations, seed_groups

#: a word must be in this many of the fitting turns' observations to be a feature
MIN_TURNS = 20
#: L2 penalty on the critic's weights, per turn fitted
L2 = 1e-3


def features(observation: str, reports: tuple[str, ...]) -> set[str]:
    """The observation's words, each with its line's first word (so a notice above a line
    does not change what the line says) and its place on the line, but for the lines
    opening with one of `reports` (the scenario's `report_lines`). A command must earn
    its credit by where it led, not by its own report: read, any reply after a BLOCKED
    move (EM Anomaly's `Last action:` line), an unreadable one too, was drawn up because
    the next observation no longer said BLOCKED; and an unreadable reply's notice moved
    every line below it (docs/training.md, "What reading the report did")."""
    return {
        f"{line.split()[0]}:{place}:{word}"
        for line in observation.splitlines()
        if line.strip() and not line.startswith(reports)
        for place, word in enumerate(line.split())
    }


class Critic:
    """P(the episode is won | the observation), logistic in the observation's words."""

    def __init__(self, episodes: Sequence[RecordedEpisode], reports: tuple[str, ...]) -> None:
        self.reports = reports
        shown = [(features(o, reports), e.success) for e in episodes for o in e.observations]
        counts = Counter(word for words, _ in shown for word in words)
        # a word in every turn says nothing the bias does not
        self.vocabulary = {
            word: at
            for at, word in enumerate(
                sorted(w for w, n in counts.items() if MIN_TURNS <= n < len(shown))
            )
        }
        inputs = self.encoded([words for words, _ in shown])
        targets = torch.tensor([float(won) for _, won in shown], dtype=torch.float64)
        self.weights = torch.zeros(len(self.vocabulary), dtype=torch.float64, requires_grad=True)
        self.bias = torch.zeros((), dtype=torch.float64, requires_grad=True)
        optimizer = torch.optim.LBFGS([self.weights, self.bias], max_iter=200)

        def loss() -> torch.Tensor:
            optimizer.zero_grad()
            logits = inputs @ self.weights + self.bias
            fit = torch.nn.functional.binary_cross_entropy_with_logits(logits, targets)
            total = fit + L2 / 2 * self.weights.pow(2).sum()
            total.backward()
            return total

        optimizer.step(loss)

    def encoded(self, shown: Sequence[set[str]]) -> torch.Tensor:
        rows = torch.zeros(len(shown), len(self.vocabulary), dtype=torch.float64)
        for row, words in enumerate(shown):
            for word in words:
                if word in self.vocabulary:
                    rows[row, self.vocabulary[word]] = 1.0
        return rows

    def values(self, observations: Sequence[str]) -> list[float]:
        with torch.no_grad():
            shown = [features(o, self.reports) for o in observations]
            logits = self.encoded(shown) @ self.weights
            return torch.sigmoid(logits + self.bias).tolist()


def fold_critics(
    episodes: Sequence[RecordedEpisode], credit: str
) -> Iterator[tuple[Critic, list[int]]]:
    """Two critics, each fit on one half of the seeds (alternating), with the episodes of
    the other half it values (their indices): no episode is valued by a critic that saw
    its ending."""
    require_observations(episodes, credit)
    groups = seed_groups(episodes)
    folds = [[at for group in groups[half::2] for at in group] for half in (0, 1)]
    if any(len({episodes[at].success for at in fold}) < 2 for fold in folds):
        raise ValueError(
            f"--credit {credit}: each half of the seeds needs won and lost episodes to fit a "
            "critic on; sample more seeds"
        )
    reports = registry.get(episodes[0].spec.env).load().report_lines
    for fitted, valued in (folds, folds[::-1]):
        yield Critic([episodes[at] for at in fitted], reports), valued


def critic_value_changes(
    episodes: Sequence[RecordedEpisode],
) -> tuple[list[RecordedEpisode], list[list[float]]]:
    """Every episode with a weight for each turn: the change its command made in the
    value of the observation, by a critic fit on the other fold of seeds; the last turn
    its success minus the value of the observation it answered."""
    weights: dict[int, list[float]] = {}
    for critic, valued in fold_critics(episodes, "critic"):
        for at in valued:
            values = [*critic.values(episodes[at].observations), episodes[at].success]
            weights[at] = [after - before for before, after in pairwise(values)]
    return list(episodes), [weights[at] for at in range(len(episodes))]


def drawn_by_weight(weights: Sequence[float], count: int, rng_seed: int) -> list[tuple[int, float]]:
    """`count` of the turns, drawn with replacement in proportion to their weight's size,
    each weighing its weight's sign times the mean size: the same expected gradient as
    every turn at its weight (up to a constant), spent on the turns the critic says
    mattered instead of the many where it saw nothing change."""
    sizes = [abs(weight) for weight in weights]
    mean_size = sum(sizes) / len(sizes)
    drawn = random.Random(rng_seed).choices(range(len(weights)), weights=sizes, k=count)
    return [(at, mean_size if weights[at] > 0 else -mean_size) for at in sorted(drawn)]
