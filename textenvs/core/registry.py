"""The scenario registry: what each scenario package declares (`core.declaration`), gathered
once; gymnasium ids (`textenvs/<Name>-v<version>`) and short CLI names."""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import re
from typing import Any

import gymnasium as gym

from textenvs.core.declaration import Scenario
from textenvs.core.env import TextEnv

#: where the scenario packages live; imported by name, as every entry point is, since the
#: scenarios sit above core
SCENARIO_PACKAGES = "textenvs.scenarios"


def declared() -> tuple[Scenario, ...]:
    """Every scenario package's declaration (`textenvs/scenarios/<package>/declaration.py`),
    in their declared order. A package there without one is a mistake, not a skip."""
    found = []
    for package in pkgutil.iter_modules(importlib.import_module(SCENARIO_PACKAGES).__path__):
        if package.ispkg:
            module = importlib.import_module(f"{SCENARIO_PACKAGES}.{package.name}.declaration")
            found.append(module.SCENARIO)
    ordered = tuple(sorted(found, key=lambda scenario: scenario.order))
    for facet in ("name", "order", "gym_name"):
        values = [getattr(scenario, facet) for scenario in ordered]
        if len(set(values)) != len(values):
            raise RuntimeError(f"two scenarios declare the same {facet}: {values}")
    return ordered


SCENARIOS: tuple[Scenario, ...] = declared()


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
