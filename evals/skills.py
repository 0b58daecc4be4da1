"""Skill metrics: per-episode figures that carry signal where success cannot.

Each scenario says its own (`core.scoring`, reached through the registry); this module
only dispatches. `measure(env, seed, episode)` reads one played episode into a flat
`{name: number | bool | None}`; `aggregate` turns a scenario's per-episode values into
the figures a report shows, which `label` and `format_value` describe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textenvs.core.registry import UnknownEnvError, get
from textenvs.core.scoring import Episode, Scoring, Skills


def scoring_of(env: str) -> Scoring:
    """The scenario's scoring; the default one (success alone) for a scenario this
    registry does not know (an old record's)."""
    try:
        return get(env).scoring()
    except UnknownEnvError:
        return Scoring()


def measure(env: str, seed: int | None, episode: Episode) -> Skills:
    """The skill fields of one episode ({} for a scenario without any)."""
    return scoring_of(env).measure(seed, episode)


def aggregate(env: str, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A scenario's skill figures over scored episode records (None where no episode
    says). Keys are stable: they name CSV columns."""
    return scoring_of(env).aggregate(records)


def label(env: str, field: str) -> str:
    """What an aggregate figure is, for tables and the CSV header."""
    return scoring_of(env).labels.get(field, (field, "mean"))[0]


def format_value(env: str, field: str, value: Any) -> str:
    if value is None:
        return "n/a"
    kind = scoring_of(env).labels.get(field, ("", "mean"))[1]
    if kind == "share":
        return f"{value:.1%}"
    if kind == "count":
        return str(value)
    return f"{value:.2f}"
