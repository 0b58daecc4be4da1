"""Squad Reconnaissance and Elimination."""

from textenvs.scenarios.squad_recon.declaration import SCENARIO
from textenvs.scenarios.squad_recon.env import SquadReconEnv
from textenvs.scenarios.squad_recon.state import (
    Order,
    Orders,
    ReconObservation,
    ReconState,
    SquadReconAction,
)

__all__ = [
    "SCENARIO",
    "Order",
    "Orders",
    "ReconObservation",
    "ReconState",
    "SquadReconAction",
    "SquadReconEnv",
]
