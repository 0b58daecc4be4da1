"""Magnetic Field Pattern Recognition."""

from textenvs.scenarios.magnetic_field.declaration import SCENARIO
from textenvs.scenarios.magnetic_field.env import MagneticFieldEnv
from textenvs.scenarios.magnetic_field.state import (
    Action,
    MagneticFieldAction,
    MagneticObservation,
    MagneticState,
)

__all__ = [
    "SCENARIO",
    "Action",
    "MagneticFieldAction",
    "MagneticFieldEnv",
    "MagneticObservation",
    "MagneticState",
]
