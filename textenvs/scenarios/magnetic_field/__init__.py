"""Magnetic Field Pattern Recognition."""

from textenvs.scenarios.magnetic_field.env import MagneticFieldEnv
from textenvs.scenarios.magnetic_field.state import (
    Action,
    MagneticFieldAction,
    MagneticObservation,
    MagneticState,
)

__all__ = [
    "Action",
    "MagneticFieldAction",
    "MagneticFieldEnv",
    "MagneticObservation",
    "MagneticState",
]
