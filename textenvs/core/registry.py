"""The scenario registry: gymnasium ids (`textenvs/<Name>-v0`) and short CLI names."""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from textenvs.core.env import TextEnv


@dataclass(frozen=True)
class Scenario:
    name: str  # short CLI name
    env_id: str  # gymnasium id
    entry_point: str  # "module:Class"
    title: str

    def load(self) -> type[TextEnv[Any, Any]]:
        module, _, attr = self.entry_point.partition(":")
        return getattr(importlib.import_module(module), attr)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "treasure-hunt",
        "textenvs/TreasureHunt-v5",
        "textenvs.scenarios.treasure_hunt.env:TreasureHuntEnv",
        "Inverted-Symbol Treasure Hunt Grid",
    ),
    Scenario(
        "magnetic-field",
        "textenvs/MagneticField-v5",
        "textenvs.scenarios.magnetic_field.env:MagneticFieldEnv",
        "Magnetic Field Pattern Recognition",
    ),
    Scenario(
        "em-anomaly",
        "textenvs/EMAnomaly-v5",
        "textenvs.scenarios.em_anomaly.env:EMAnomalyEnv",
        "Electromagnetic Field Anomaly Mapping",
    ),
    Scenario(
        "squad-recon",
        "textenvs/SquadRecon-v5",
        "textenvs.scenarios.squad_recon.env:SquadReconEnv",
        "Squad Reconnaissance and Elimination",
    ),
    Scenario(
        "megacity",
        "textenvs/Megacity-v6",
        "textenvs.scenarios.megacity.env:MegacityEnv",
        "Subterranean Megacity",
    ),
)


class UnknownEnvError(KeyError):
    def __init__(self, name: str) -> None:
        known = [s.name for s in SCENARIOS]
        close = difflib.get_close_matches(name.lower(), known, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        self.message = f"unknown environment '{name}'. Known: {', '.join(known)}.{hint}"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


def names() -> list[str]:
    return [s.name for s in SCENARIOS]


def get(name: str) -> Scenario:
    """Look a scenario up by CLI name, gymnasium id, or class-style name (any case)."""
    key = name.strip().lower()
    for scenario in SCENARIOS:
        short_id = scenario.env_id.split("/")[1].lower()
        if key in (scenario.name, scenario.env_id.lower(), short_id, short_id[:-3]):
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
