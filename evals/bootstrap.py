"""Bootstrap confidence intervals over seeds for the headline metric, the normalised
score and the mean normalised score over scenarios (the "all" row).

Episodes of one seed share its world, so seeds, not episodes, are resampled (with
replacement, as many as the run has); each scenario's headline is a mean of per-episode
values, recomputed on each resample. The "all" interval resamples each scenario's seeds
independently and averages the scenarios' normalised scores per resample. Deterministic:
each scenario's resamples come from a numpy Generator seeded by a fixed number and the
scenario's name, so a run's intervals do not depend on what else is in the report.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

RESAMPLES = 2000
SEED = 20240601


def seed_resamples(
    values: Sequence[float], seeds: Sequence[int], env: str, resamples: int = RESAMPLES
) -> np.ndarray | None:
    """The mean of `values` (one per episode, `seeds[i]` its seed) on `resamples`
    resamples of the seeds; None without values."""
    if not values:
        return None
    clusters: dict[int, list[float]] = {}
    for value, seed in zip(values, seeds, strict=True):
        clusters.setdefault(int(seed), []).append(float(value))
    # In seed order: the same episodes give the same interval in whatever order they finished.
    order = sorted(clusters)
    sums = np.array([sum(clusters[seed]) for seed in order])
    counts = np.array([len(clusters[seed]) for seed in order], dtype=float)
    rng = np.random.default_rng([SEED, zlib.crc32(env.encode())])
    picks = rng.integers(0, len(sums), size=(resamples, len(sums)))
    return sums[picks].sum(axis=1) / counts[picks].sum(axis=1)


def normalise(means: np.ndarray, band: dict | None) -> np.ndarray | None:
    """`(x - random) / (ceiling - random)` clipped to [0, 1], like `bands.normalised`."""
    if not band or band["ceiling"] <= band["random"]:
        return None
    return np.clip((means - band["random"]) / (band["ceiling"] - band["random"]), 0.0, 1.0)


def interval(samples: np.ndarray | None) -> list[float] | None:
    """The 95% percentile interval of bootstrap samples."""
    if samples is None:
        return None
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return [float(lo), float(hi)]
