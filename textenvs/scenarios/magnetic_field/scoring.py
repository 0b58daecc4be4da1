"""Magnetic Field's scores: the mean score (0.25 per right character) and characters
right at the end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from textenvs.core import scoring


class MagneticFieldScoring(scoring.Scoring):
    headline = scoring.Headline("mean_return", "mean score (0.25 per right character)")
    labels: ClassVar[scoring.Labels] = {"chars_correct": ("characters right per episode", "mean")}

    def measure(self, seed: int | None, episode: scoring.Episode) -> scoring.Skills:
        for turn in reversed(episode.get("turns") or []):
            for e in turn.get("events", []):
                if e.get("type") == "evaluated" and isinstance(e.get("correct"), int):
                    return {"chars_correct": e["correct"]}
        return {"chars_correct": None}

    def aggregate(self, records: Sequence[scoring.Record]) -> dict[str, Any]:
        return {"chars_correct": scoring.mean(scoring.skill_values(records, "chars_correct"))}
