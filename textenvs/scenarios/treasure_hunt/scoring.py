"""Treasure Hunt's scores: the expected success of the exploration, its headline.

Success alone spans 6-9% and needs ~1,200 episodes per agent to separate random from
perfect play; the expected success of the exploration carries the same meaning without
the luck of where the Bomb lies. Skill fields: new tiles stepped onto, exploration share
(new tiles / steps), and the expected success of that exploration (`treasure_curve`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any, ClassVar

from textenvs.core import scoring
from textenvs.scenarios.treasure_hunt.state import FLOWERS, SIZE, STEP_BUDGET

HIDDEN_TILES = SIZE * SIZE - 1  # every tile but the start


@functools.cache
def treasure_curve(tiles: int = HIDDEN_TILES, traps: int = FLOWERS) -> tuple[float, ...]:
    """`curve[n]`: the chance of winning for play that steps onto n new tiles.

    Nothing is known about a tile before stepping on it, so whatever order a player
    chooses, the new tiles it reaches are a uniform random draw of the hidden ones. It
    wins when the Bomb comes up before every Flower within the first n: the sum over i
    of P(the first i - 1 new tiles are Empty) x P(the i-th is the Bomb).
    """
    empty = tiles - traps - 1
    curve, all_empty, total = [0.0], 1.0, 0.0
    for i in range(1, tiles + 1):
        total += all_empty / (tiles - i + 1)
        curve.append(total)
        all_empty *= max(0, empty - (i - 1)) / (tiles - i + 1)
    return tuple(curve)


def expected_treasure_success(new_tiles: float) -> float:
    """`treasure_curve` at a fractional tile count (linear between whole counts)."""
    curve = treasure_curve()
    n = min(max(new_tiles, 0.0), float(HIDDEN_TILES))
    lo = math.floor(n)
    hi = min(lo + 1, HIDDEN_TILES)
    return curve[lo] + (curve[hi] - curve[lo]) * (n - lo)


TREASURE_OPTIMUM = expected_treasure_success(STEP_BUDGET)


class TreasureHuntScoring(scoring.Scoring):
    headline = scoring.Headline("skills.expected_success", "expected success of the exploration")
    labels: ClassVar[scoring.Labels] = {
        "exploration": ("exploration (new tiles / steps)", "share"),
        "expected_success": ("expected success of the exploration", "share"),
    }

    def measure(self, seed: int | None, episode: scoring.Episode) -> scoring.Skills:
        turns = episode.get("turns") or []
        steps = len(turns)
        new = sum(
            1
            for turn in turns
            for e in turn.get("events", [])
            if e.get("type") == "reveal" and not e.get("own")
        )
        share = new / steps if steps else None
        # An episode cut short by the Bomb or a Flower would have gone on exploring at the
        # same rate: extend it by its unused steps so the figure measures the exploration,
        # not where the Bomb happened to lie.
        left = (episode.get("final_info_observation") or {}).get("steps_left", 0)
        reach = new + (left * share if share and episode.get("outcome") != "timeout" else 0)
        return {
            "new_tiles": new,
            "exploration": share,
            "expected_success": expected_treasure_success(reach) if steps else None,
        }

    def aggregate(self, records: Sequence[scoring.Record]) -> dict[str, Any]:
        return {
            "exploration": scoring.mean(scoring.skill_values(records, "exploration")),
            "expected_success": scoring.mean(scoring.skill_values(records, "expected_success")),
        }

    def ceiling(self, seeds: Sequence[int], scripted: float) -> scoring.Ceiling:
        return (
            TREASURE_OPTIMUM,
            "exact",
            f"stepping onto a new tile every one of the {STEP_BUDGET} steps; nothing is "
            "known about a tile before stepping on it, so no order of tiles does better "
            "(exact probability that the Bomb comes before every Flower)",
        )
