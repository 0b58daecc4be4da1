"""Subterranean Megacity."""

from textenvs.scenarios.megacity.declaration import SCENARIO
from textenvs.scenarios.megacity.env import MegacityEnv
from textenvs.scenarios.megacity.state import (
    Action,
    MegacityAction,
    MegacityObservation,
    MegacityState,
)

__all__ = [
    "SCENARIO",
    "Action",
    "MegacityAction",
    "MegacityEnv",
    "MegacityObservation",
    "MegacityState",
]
