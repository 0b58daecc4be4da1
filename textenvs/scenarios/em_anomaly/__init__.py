"""Electromagnetic Field Anomaly Mapping."""

from textenvs.scenarios.em_anomaly.declaration import SCENARIO
from textenvs.scenarios.em_anomaly.env import EMAnomalyEnv
from textenvs.scenarios.em_anomaly.state import (
    Action,
    EMAnomalyAction,
    EMObservation,
    EMState,
    Facing,
)

__all__ = [
    "SCENARIO",
    "Action",
    "EMAnomalyAction",
    "EMAnomalyEnv",
    "EMObservation",
    "EMState",
    "Facing",
]
