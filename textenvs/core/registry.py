"""The scenario registry: gymnasium ids (`textenvs/<Name>-v0`) and short CLI names."""

from __future__ import annotations

import difflib
import importlib
import re
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from textenvs.core.env import TextEnv
from textenvs.core.scoring import Scoring


@dataclass(frozen=True)
class Scenario:
    name: str  # short CLI name
    env_id: str  # gymnasium id
    entry_point: str  # "module:Class"
    title: str
    scoring_entry_point: str  # "module:Class" of its `core.scoring.Scoring`

    def load(self) -> type[TextEnv[Any, Any]]:
        return load_entry_point(self.entry_point)

    def scoring(self) -> Scoring:
        """What the scenario scores: its headline, skill metrics and ceiling."""
        return load_entry_point(self.scoring_entry_point)()


def load_entry_point(entry_point: str) -> Any:
    """What a "module:attribute" entry point names (the module imported on demand)."""
    module, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module), attr)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "treasure-hunt",
        "textenvs/TreasureHunt-v6",
        "textenvs.scenarios.treasure_hunt.env:TreasureHuntEnv",
        "Inverted-Symbol Treasure Hunt Grid",
        "textenvs.scenarios.treasure_hunt.scoring:TreasureHuntScoring",
    ),
    Scenario(
        "magnetic-field",
        "textenvs/MagneticField-v6",
        "textenvs.scenarios.magnetic_field.env:MagneticFieldEnv",
        "Magnetic Field Pattern Recognition",
        "textenvs.scenarios.magnetic_field.scoring:MagneticFieldScoring",
    ),
    Scenario(
        "em-anomaly",
        "textenvs/EMAnomaly-v6",
        "textenvs.scenarios.em_anomaly.env:EMAnomalyEnv",
        "Electromagnetic Field Anomaly Mapping",
        "textenvs.scenarios.em_anomaly.scoring:EMAnomalyScoring",
    ),
    Scenario(
        "squad-recon",
        "textenvs/SquadRecon-v6",
        "textenvs.scenarios.squad_recon.env:SquadReconEnv",
        "Squad Reconnaissance and Elimination",
        "textenvs.scenarios.squad_recon.scoring:SquadReconScoring",
    ),
    Scenario(
        "megacity",
        "textenvs/Megacity-v7",
        "textenvs.scenarios.megacity.env:MegacityEnv",
        "Subterranean Megacity",
        "textenvs.scenarios.megacity.scoring:MegacityScoring",
    ),
)


class UnknownEnvError(KeyError):
    def __init__(self, name: str) -> None:
        known = [s.name for s in SCENARIOS]
        close = difflib.get_close_matches(name.lower(), known, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        self.message = f"unknown environment '{name}'; {hint}known: {', '.join(known)}"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


def names() -> list[str]:
    return [s.name for s in SCENARIOS]


def _spelling(name: str) -> str:
    """A name without case or separators: 'Treasure_Hunt', 'treasurehunt' and
    'treasure-hunt' are one spelling, as the class-style names need."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def get(name: str) -> Scenario:
    """Look a scenario up by CLI name, gymnasium id, or class-style name (any case, any
    separators: `_spelling`)."""
    key = _spelling(name)
    for scenario in SCENARIOS:
        short_id = scenario.env_id.split("/")[1]
        unversioned = re.sub(r"-v\d+$", "", short_id)
        if name.strip().lower() == scenario.env_id.lower() or key in {
            _spelling(scenario.name),
            _spelling(short_id),
            _spelling(unversioned),
        }:
            return scenario
    raise UnknownEnvError(name)


def make(name: str, **kwargs: Any) -> TextEnv[Any, Any]:
    """A fresh, unwrapped env (its `parse`, `rules` and `command_for` are at hand).

    `gymnasium.make(scenario.env_id)` gives the same env inside gymnasium's wrappers.
    """
    return get(name).load()(**kwargs)


def episode_level(
    name: str, options: dict[str, Any] | None = None, constructed: int | None = None
) -> int | None:
    """The level an episode of scenario `name` plays: its reset option `level`, else the
    level the env was made with (`constructed`), else the scenario's default; None for a
    scenario without levels (or one this registry does not know). Reports label and read
    scores by it."""
    try:
        scenario = get(name).load()
    except UnknownEnvError:
        return None
    if not scenario.levels:
        return None
    level = (options or {}).get("level", constructed)
    return scenario.default_level if level is None else int(level)


def register_all() -> None:
    """Register every scenario with gymnasium (idempotent)."""
    for scenario in SCENARIOS:
        if scenario.env_id not in gym.registry:
            gym.register(id=scenario.env_id, entry_point=scenario.entry_point)
