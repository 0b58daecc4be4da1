"""Megacity initial maps: the only thing a seed or a level changes.

A level changes how the maps are drawn (rock stress, faults, airflow), never the physics
in `physics.py`, the costs or the rewards. Every level draws from the generator in the
same order, and the default level draws exactly what v3 drew for the same seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np

from textenvs.scenarios.megacity.state import DIRECTIONS, SIZE, MegacityState, Seam

INITIAL_STRESS_MAX = 95
SEAM_STRESS = 10  # extra stress on the seam cells
FAULT_STRESS = 25  # extra stress on a fault


@dataclass(frozen=True)
class LevelSpec:
    """How one level draws its maps."""

    #: uniform base stress per cell, [low, high)
    stress: tuple[int, int]
    #: faults, uniformly among the 16 cells off the seams
    faults: int
    #: strength of the prevailing current per cell, [low, high)
    flow: tuple[int, int]
    #: chance that a cell also has a +-1 cross current
    cross_flow: float


# Softer rock and fewer faults at the low levels, harder rock and more faults at level 3.
# Levels 0, 1 and 3 blow a calm current (strength 1 in every cell, a crosswind in half of
# them): every district needs shafts placed for both airflow phases, which no fixed
# recipe does, so soft rock does not make the low levels a recipe's.
LEVEL_SPECS: dict[int, LevelSpec] = {
    0: LevelSpec(stress=(36, 72), faults=1, flow=(1, 2), cross_flow=0.5),
    1: LevelSpec(stress=(50, 88), faults=3, flow=(1, 2), cross_flow=0.5),
    2: LevelSpec(stress=(54, 92), faults=3, flow=(1, 4), cross_flow=0.35),  # v3's maps
    3: LevelSpec(stress=(60, 96), faults=5, flow=(1, 2), cross_flow=0.5),
}
LEVELS = tuple(LEVEL_SPECS)
DEFAULT_LEVEL = 2


def checked_level(level: object) -> int:
    """The one validation of `level` (reset option, constructor, CLI, service)."""
    if isinstance(level, bool) or not isinstance(level, Integral) or int(level) not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    return int(level)


def initial_state(rng: np.random.Generator, level: int = DEFAULT_LEVEL) -> MegacityState:
    """One row seam and one column seam, each on an inner line (rows/columns 2-4) with a
    random pull direction, so that only four cells lie clear of every seam's sideways
    pull; the level's faults off the seams; stress from noise + seam + fault terms; a
    prevailing current with per-cell strength and occasional cross currents."""
    spec = LEVEL_SPECS[checked_level(level)]
    row, row_dir = int(rng.integers(1, SIZE - 1)), ("east", "west")[int(rng.integers(2))]
    col, col_dir = int(rng.integers(1, SIZE - 1)), ("north", "south")[int(rng.integers(2))]
    row_cells = [(c, row) for c in range(SIZE)]
    col_cells = [(col, r) for r in range(SIZE)]
    seams = (
        Seam(tuple(row_cells if row_dir == "east" else row_cells[::-1]), row_dir),
        Seam(tuple(col_cells if col_dir == "north" else col_cells[::-1]), col_dir),
    )
    on_seam = set(row_cells) | set(col_cells)
    free = [(c, r) for r in range(SIZE) for c in range(SIZE) if (c, r) not in on_seam]
    picks = rng.choice(len(free), size=spec.faults, replace=False)
    faults = tuple(sorted((free[int(i)] for i in picks), key=lambda c: (c[1], c[0])))
    noise = rng.integers(*spec.stress, size=(SIZE, SIZE))
    stress = []
    for r in range(SIZE):
        line = []
        for c in range(SIZE):
            value = int(noise[r][c]) + SEAM_STRESS * ((c, r) in on_seam)
            value += FAULT_STRESS * ((c, r) in faults)
            line.append(min(INITIAL_STRESS_MAX, value))
        stress.append(tuple(line))
    prevailing = ("north", "south", "east", "west")[int(rng.integers(4))]
    px, py = DIRECTIONS[prevailing]
    mags = rng.integers(*spec.flow, size=(SIZE, SIZE))
    cross = rng.random(size=(SIZE, SIZE)) < spec.cross_flow
    cross_sign = rng.choice((-1, 1), size=(SIZE, SIZE))
    flow = []
    for r in range(SIZE):
        line = []
        for c in range(SIZE):
            m, k = int(mags[r][c]), int(cross_sign[r][c]) * bool(cross[r][c])
            line.append((px * m + abs(py) * k, py * m + abs(px) * k))
        flow.append(tuple(line))
    return MegacityState(stress=tuple(stress), seams=seams, faults=faults, base_flow=tuple(flow))
