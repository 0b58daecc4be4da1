"""Megacity's scores: success rate, districts standing at the end, and steps in
violation of a threshold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from textenvs.core import scoring

VIOLATION_TERMS = ("integrity_low", "air_low")


class MegacityScoring(scoring.Scoring):
    labels: ClassVar[scoring.Labels] = {
        "districts_at_end": ("districts standing at the end", "mean"),
        "violation_steps": ("steps in violation per episode", "mean"),
    }

    def measure(self, seed: int | None, episode: scoring.Episode) -> scoring.Skills:
        """Districts from the last observation (a count, or a list of districts); a step
        is in violation when its reward names a threshold penalty or an event says so."""
        final = episode.get("final_info_observation") or {}
        districts = final.get("districts")
        if isinstance(districts, list):
            districts = len(districts)
        violations, reported = 0, False
        for turn in episode.get("turns") or []:
            hit = False
            for e in turn.get("events", []):
                if e.get("type") == "reward":
                    reported = True
                    hit |= any(term in (e.get("terms") or {}) for term in VIOLATION_TERMS)
                elif e.get("type") == "violation":
                    reported = hit = True
            violations += hit
        return {
            "districts": districts if isinstance(districts, int) else None,
            "violation_steps": violations if reported else None,
        }

    def aggregate(self, records: Sequence[scoring.Record]) -> dict[str, Any]:
        return {
            "districts_at_end": scoring.mean(scoring.skill_values(records, "districts")),
            "violation_steps": scoring.mean(scoring.skill_values(records, "violation_steps")),
        }
