"""Inverted-Symbol Treasure Hunt Grid."""

from textenvs.scenarios.treasure_hunt.declaration import SCENARIO
from textenvs.scenarios.treasure_hunt.env import TreasureHuntEnv
from textenvs.scenarios.treasure_hunt.state import (
    Action,
    TreasureHuntAction,
    TreasureObservation,
    TreasureState,
)

__all__ = [
    "SCENARIO",
    "Action",
    "TreasureHuntAction",
    "TreasureHuntEnv",
    "TreasureObservation",
    "TreasureState",
]
