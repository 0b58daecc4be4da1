"""The hidden physics of the Megacity: small pure functions of the state and the
numbers it carries (`parameters.Physics`), and the material, cost and research tables.

Identical in every episode; only the initial maps (seams, faults, stress, base airflow)
vary by seed. docs/scenarios/megacity.md explains each equation. The agent never sees
this module except through research (`research.py` holds the texts research reveals).
"""

from __future__ import annotations

from functools import lru_cache

from textenvs.scenarios.megacity.parameters import Physics
from textenvs.scenarios.megacity.state import (
    DIRECTIONS,
    SIZE,
    Cell,
    Grid,
    MegacityState,
    Seam,
    Vec,
    VecGrid,
    neighbours,
)

# --- supports: (still-load capacity, sideways capacity, sideways brittleness) ----------
MATERIAL_SPECS: dict[str, tuple[int, int, int]] = {
    "bare": (30, 0, 1),
    "timber": (55, 0, 1),
    "basalt": (75, 0, 2),
    "mycelium": (60, 25, 1),
    "lodestone": (85, 5, 1),
}
UNLOCK_AT = {"mycelium": 2, "lodestone": 4}  # research points needed
# --- costs ----------------------------------------------------------------------------
COSTS = {
    "excavate": 4,
    "support": 3,
    "support_advanced": 5,
    "vent": 5,
    "conduit": 2,  # per new cell
    "district": 6,
    "research": 3,
    "scan": 1,
    "wait": 0,
}
# --- research -------------------------------------------------------------------------
POINTS_PER_RULE = 2  # the first point gives a clue, the second decodes the rule


def seam_cells(state: MegacityState) -> frozenset[Cell]:
    return _seam_set(state.seams)


@lru_cache(maxsize=256)
def _seam_set(seams: tuple[Seam, ...]) -> frozenset[Cell]:
    """The seam cells; seams are fixed per episode and asked for every step."""
    return frozenset(c for seam in seams for c in seam.cells)


def phase_sign(physics: Physics, steps: int) -> int:
    """+1 while the base airflow blows as at the start, -1 in the reversed periods."""
    return -1 if (steps // physics.reversal_period) % 2 else 1


def flow_field(
    physics: Physics, base: VecGrid, vents: tuple[tuple[Cell, str], ...], steps: int
) -> VecGrid:
    """Airflow after `steps` completed steps: the base field, sign-flipped in odd periods
    of `reversal_period`, plus `vent_mag` along each shaft (shafts never reverse)."""
    return _field(physics.vent_mag, base, vents, phase_sign(physics, steps))


@lru_cache(maxsize=512)
def _field(vent_mag: int, base: VecGrid, vents: tuple[tuple[Cell, str], ...], sign: int) -> VecGrid:
    field = [[(sign * dx, sign * dy) for dx, dy in row] for row in base]
    for (c, r), (vx, vy) in vent_cells(vents):
        dx, dy = field[r][c]
        field[r][c] = (dx + vx * vent_mag, dy + vy * vent_mag)
    return tuple(tuple(row) for row in field)


def vent_cells(vents: tuple[tuple[Cell, str], ...]) -> list[tuple[Cell, Vec]]:
    """Every (cell, unit vector) a shaft crosses: from its start to the grid edge."""
    out = []
    for (c, r), direction in vents:
        vx, vy = DIRECTIONS[direction]
        while 0 <= c < SIZE and 0 <= r < SIZE:
            out.append(((c, r), (vx, vy)))
            c, r = c + vx, r + vy
    return out


def strength(vec: Vec) -> int:
    return abs(vec[0]) + abs(vec[1])


def seam_flow(stress: Grid, state: MegacityState) -> Grid:
    """Sideways gravity: each seam cell but the last passes floor(stress x `seam_flow_pct`
    x `conduit_seam_gain` (with a conduit on it, else x 1) / 100) to the next cell
    downstream. A cell receives before it gives: it ends at min(`stress_max`, stress +
    received) - passed, so the cap can eat stress anywhere on the seam, not only at the
    last cell. Seams are applied in order (row seam, then column)."""
    physics = state.physics
    pct, gain, cap = physics.seam_flow_pct, physics.conduit_seam_gain, physics.stress_max
    grid = [list(row) for row in stress]
    conduits = state.conduits
    for seam in state.seams:
        cells = seam.cells
        # Every amount is taken from the stress before this seam moves anything.
        moved = [
            grid[r][c] * pct * (gain if (c, r) in conduits else 1) // 100 for c, r in cells[:-1]
        ]
        for (c, r), (c2, r2), amount in zip(cells[:-1], cells[1:], moved, strict=True):
            grid[r][c] -= amount
            grid[r2][c2] = min(cap, grid[r2][c2] + amount)
    return tuple(map(tuple, grid))


def conduit_damping(state: MegacityState, fresh: list[Cell]) -> Grid:
    """Newly laid conduit cells off every seam dampen their cell's gravity once: each
    loses `conduit_damp` stress (a one-off, so a conduit cannot make any cell buildable)."""
    on_seam = _seam_set(state.seams)
    grid = [list(row) for row in state.stress]
    for c, r in fresh:
        if (c, r) not in on_seam:
            grid[r][c] = max(0, grid[r][c] - state.physics.conduit_damp)
    return tuple(map(tuple, grid))


def excavation_transfer(state: MegacityState, cell: Cell) -> Grid:
    """Load transfer when `cell` is hollowed out: its neighbours take extra load, but
    along each seam through it the cells two or more steps away, and the cells beside
    those, are relieved."""
    physics = state.physics
    grid = [list(row) for row in state.stress]
    faulted = cell in state.faults
    load = physics.fault_neighbour_load if faulted else physics.excavate_neighbour_load
    for c, r in neighbours(cell):
        grid[r][c] = min(physics.stress_max, grid[r][c] + load)
    for (c, r), amount in relief_from(physics, state.seams, cell):
        grid[r][c] = max(0, grid[r][c] - amount)
    return tuple(tuple(row) for row in grid)


def relief_from(
    physics: Physics, seams: tuple[Seam, ...], cell: Cell
) -> tuple[tuple[Cell, int], ...]:
    """(cell, stress removed) for every cell that excavating `cell` relieves."""
    return _relief(physics.seam_relief, physics.flank_relief, seams, cell)


# Memoised helpers take the numbers they use, not the whole `Physics`: ints hash at once.
@lru_cache(maxsize=1024)
def _relief(
    seam_relief: int, flank_relief: int, seams: tuple[Seam, ...], cell: Cell
) -> tuple[tuple[Cell, int], ...]:
    out: list[tuple[Cell, int]] = []
    for seam in seams:
        if cell not in seam.cells:
            continue
        at = seam.cells.index(cell)
        for far in seam.cells[at + 2 :] + seam.cells[: max(0, at - 1)]:
            out.append((far, seam_relief))
            out += [(n, flank_relief) for n in neighbours(far) if n not in seam.cells]
    return tuple(out)


def pull_of(physics: Physics, seams: tuple[Seam, ...], cell: Cell) -> int:
    """The sideways pull at a cell before conduits: `pull_on_seam` per seam through it,
    `pull_beside_seam` per seam that runs alongside it (through an orthogonal neighbour)."""
    return _pull(physics.pull_on_seam, physics.pull_beside_seam, seams, cell)


@lru_cache(maxsize=4096)
def _pull(on_seam: int, beside_seam: int, seams: tuple[Seam, ...], cell: Cell) -> int:
    near = set(neighbours(cell))
    total = 0
    for seam in seams:
        if cell in seam.cells:
            total += on_seam
        elif near.intersection(seam.cells):
            total += beside_seam
    return total


def lateral_load(state: MegacityState, cell: Cell) -> int:
    """The sideways load on a chamber, x `conduit_seam_gain` with a conduit on its cell."""
    gain = state.physics.conduit_seam_gain if cell in state.conduits else 1
    return pull_of(state.physics, state.seams, cell) * gain


def chamber_excess(state: MegacityState, cell: Cell, stress: Grid | None = None) -> int:
    """How far a chamber's load exceeds what holds it up (0 = adequately supported)."""
    still_cap, side_cap, brittle = MATERIAL_SPECS[state.support_at(cell) or "bare"]
    load = (stress or state.stress)[cell[1]][cell[0]]
    still = max(0, load - still_cap)
    side = max(0, lateral_load(state, cell) - side_cap) * brittle
    return still + side


def integrity_of(state: MegacityState, stress: Grid | None = None) -> int:
    """100 minus the total excess load over all chambers, floored at 0."""
    return max(0, 100 - sum(chamber_excess(state, c, stress) for c in state.chambers))


def air_target(state: MegacityState, field: VecGrid) -> int:
    """Where the air index is heading: each district adds `air_per_flow` per unit of its
    (capped) local flow above `o2_demand`, or removes it per unit below."""
    physics = state.physics
    total = physics.air_base_target
    for c, r in state.districts:
        flow = min(strength(field[r][c]), physics.flow_cap)
        total += (flow - physics.o2_demand) * physics.air_per_flow
    return max(0, min(100, total))


def next_air(physics: Physics, air: int, target: int) -> int:
    rate = physics.air_rate
    return air + max(-rate, min(rate, target - air))


def power_flows(state: MegacityState) -> tuple[int, int]:
    """(generation, demand) per step."""
    physics = state.physics
    numbers = (
        physics.power_base_gen,
        physics.seam_tap,
        physics.district_draw,
        physics.district_draw_connected,
    )
    return _power_flows(numbers, state.seams, state.conduits, state.districts)


@lru_cache(maxsize=1024)
def _power_flows(
    numbers: tuple[int, int, int, int],
    seams: tuple[Seam, ...],
    conduits: tuple[Cell, ...],
    districts: tuple[Cell, ...],
) -> tuple[int, int]:
    # Memoised: the map's parts change only when something is built, not every step.
    base_gen, seam_tap, draw, draw_connected = numbers
    on_seam = _seam_set(seams)
    generation = base_gen + seam_tap * sum(1 for c in conduits if c in on_seam)
    near = set(conduits)
    for cell in conduits:
        near.update(neighbours(cell))
    demand = sum(draw_connected if cell in near else draw for cell in districts)
    return generation, demand


def district_fault(
    state: MegacityState, cell: Cell, field: VecGrid, stress: Grid | None = None
) -> str | None:
    """Why a district core at `cell` cannot run now (None when it can): its column must
    carry the chamber's whole load and the current through the cell must be strong enough."""
    if state.support_at(cell) is None:
        return "no support column"
    if chamber_excess(state, cell, stress) > 0:
        return "the column cannot carry the load"
    if strength(field[cell[1]][cell[0]]) < state.physics.district_min_flow:
        return "the air circulation is too weak"
    return None


def support_cost(material: str) -> int:
    return COSTS["support_advanced"] if material in UNLOCK_AT else COSTS["support"]


def unlocked(material: str, research: int) -> bool:
    return research >= UNLOCK_AT.get(material, 0)
