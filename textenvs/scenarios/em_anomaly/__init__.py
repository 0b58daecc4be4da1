"""Electromagnetic Field Anomaly Mapping."""

from textenvs.scenarios.em_anomaly.env import EMAnomalyEnv
from textenvs.scenarios.em_anomaly.state import (
    Action,
    EMAnomalyAction,
    EMObservation,
    EMState,
    Facing,
)

__all__ = [
    "Action",
    "EMAnomalyAction",
    "EMAnomalyEnv",
    "EMObservation",
    "EMState",
    "Facing",
]
