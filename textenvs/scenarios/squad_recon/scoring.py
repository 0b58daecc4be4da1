"""Squad Recon's scores: success rate (both camps), camps taken, and whether a seed is
winnable at all, from its hidden strengths (which also bound the success rate)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, ClassVar

from textenvs.core import scoring
from textenvs.scenarios.squad_recon.env import SquadReconEnv


@functools.lru_cache(maxsize=4096)
def squad_recon_ceiling(seed: int) -> float:
    """The most a seed can pay, from its hidden strengths: 1.0 when all squads together
    outfight the stronger camp (take the weaker first: a won attack costs nothing), 0.5
    when they outfight only the weaker one, else 0. Walking time is not counted."""
    state = SquadReconEnv().world_for(seed)
    total = sum(s.strength for s in state.squads)
    camps = sorted(c.strength for c in state.camps)
    return 0.5 * sum(total > c for c in camps)


class SquadReconScoring(scoring.Scoring):
    headline = scoring.Headline("success_rate", "success rate (both camps)")
    labels: ClassVar[scoring.Labels] = {
        "winnable_seeds": ("winnable seeds", "count"),
        "success_on_winnable": ("success on winnable seeds", "share"),
        "camps_taken": ("camps taken per episode", "mean"),
    }

    def measure(self, seed: int | None, episode: scoring.Episode) -> scoring.Skills:
        taken = sum(
            1
            for turn in episode.get("turns") or []
            for e in turn.get("events", [])
            if e.get("type") == "camp_eliminated"
        )
        winnable = None if seed is None else squad_recon_ceiling(seed) == 1.0
        return {"camps_taken": taken, "winnable": winnable}

    def aggregate(self, records: Sequence[scoring.Record]) -> dict[str, Any]:
        winnable = [r for r in records if (r.get("skills") or {}).get("winnable")]
        won = sum(1 for r in winnable if r["success"])
        return {
            "winnable_seeds": len(winnable) if scoring.skill_values(records, "winnable") else None,
            "success_on_winnable": won / len(winnable) if winnable else None,
            "camps_taken": scoring.mean(scoring.skill_values(records, "camps_taken")),
        }

    def ceiling(self, seeds: Sequence[int], scripted: float) -> scoring.Ceiling:
        winnable = sum(squad_recon_ceiling(s) == 1.0 for s in seeds)
        return (
            winnable / len(seeds),
            "bound",
            "share of seeds whose three squads together outfight the stronger camp (both "
            "camps can fall only then); walking time is not counted",
        )
