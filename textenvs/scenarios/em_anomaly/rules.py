"""EM Anomaly rules: pure functions of (state, action), no I/O and no text."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from textenvs.core.env import Transition
from textenvs.scenarios.em_anomaly.state import (
    CLOCKWISE,
    MARK_RADIUS,
    MOVES,
    PEAK,
    SIZE,
    STEP_BUDGET,
    WALLS,
    Action,
    Cell,
    EMState,
    Facing,
)

# Uniform draws of WALLS tiles are connected about 43% of the time (measured), so 64 tries
# fail with odds below 1e-15; the constructive fallback keeps generation total anyway.
MAX_TRIES = 64
ALL_CELLS: tuple[Cell, ...] = tuple((x, y) for y in range(SIZE) for x in range(SIZE))
STEPS: tuple[Cell, ...] = tuple(MOVES.values())


class LayoutError(ValueError):
    """A generated world broke an invariant (a bug, never expected at run time)."""


def inside(cell: Cell) -> bool:
    return 0 <= cell[0] < SIZE and 0 <= cell[1] < SIZE


def manhattan(a: Cell, b: Cell) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


# The in-grid neighbours of every tile, in STEPS order: world generation runs several
# flood fills per reset, and a table lookup beats recomputing bounds each time.
NEIGHBOURS: dict[Cell, tuple[Cell, ...]] = {
    (x, y): tuple((x + dx, y + dy) for dx, dy in STEPS if 0 <= x + dx < SIZE and 0 <= y + dy < SIZE)
    for x, y in ALL_CELLS
}


def neighbours(cell: Cell) -> Iterable[Cell]:
    return NEIGHBOURS[cell]


def distances(start: Cell, walls: frozenset[Cell], limit: int | None = None) -> dict[Cell, int]:
    """Breadth-first step counts from `start` through free tiles (up to `limit` steps)."""
    seen = {start: 0}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        steps = seen[cell]
        if limit is not None and steps >= limit:
            continue
        for nxt in NEIGHBOURS[cell]:
            if nxt not in walls and nxt not in seen:
                seen[nxt] = steps + 1
                queue.append(nxt)
    return seen


# Bit boards for the connectivity test: tile (x, y) is bit y * ROW + x. The extra column
# (x = SIZE) is never free, so a shift east or west cannot wrap into the next row.
ROW = SIZE + 1
BIT: dict[Cell, int] = {(x, y): 1 << (y * ROW + x) for x, y in ALL_CELLS}
ALL_BITS = sum(BIT.values())


def connected(walls: frozenset[Cell]) -> bool:
    """Whether every free tile can reach every other one.

    A flood fill over bit boards (it runs a few times per reset: rejection sampling plus
    validation): each round grows the reached set by one step in all four directions at
    once, through free tiles only, until it stops growing.
    """
    free = ALL_BITS
    for cell in walls:
        free &= ~BIT[cell]
    if not free:
        return False
    reached, grown = 0, free & -free  # start from the lowest free tile
    while grown != reached:
        reached = grown
        grown = (reached | reached << 1 | reached >> 1 | reached << ROW | reached >> ROW) & free
    return reached == free


def _greedy_walls(rng: np.random.Generator) -> frozenset[Cell]:
    """Fallback: add walls in a random order, skipping any that would split the free tiles.

    It always reaches WALLS: a connected region of two or more tiles always has a tile
    (a leaf of a spanning tree) whose removal keeps it connected.
    """
    walls: set[Cell] = set()
    for index in rng.permutation(len(ALL_CELLS)):
        cell = ALL_CELLS[int(index)]
        if connected(frozenset(walls | {cell})):
            walls.add(cell)
            if len(walls) == WALLS:
                break
    return frozenset(walls)


def generate_walls(rng: np.random.Generator, tries: int = MAX_TRIES) -> frozenset[Cell]:
    """WALLS tiles, uniform among layouts whose free tiles are connected (rejection
    sampling, at most `tries` draws), else the constructive fallback."""
    for _ in range(tries):
        chosen = rng.choice(len(ALL_CELLS), size=WALLS, replace=False)
        walls = frozenset(ALL_CELLS[int(i)] for i in chosen)
        if connected(walls):
            return walls
    return _greedy_walls(rng)


def compute_field(walls: frozenset[Cell], node: Cell) -> tuple[tuple[int, ...], ...]:
    """FieldLevel = max(0, 3 - Manhattan) on tiles the field reaches, 0 in the shadow.

    Faraday shielding: the field travels tile to tile through free tiles only, and only
    along shortest (monotone) paths. A tile is reached when some shortest grid path from
    the node to it crosses no wall, i.e. its walking distance equals its Manhattan
    distance; a wall in the way of every such path shadows it (level 0). Walls read 0.
    """
    reach = distances(node, walls, limit=PEAK - 1)
    rows = [[0] * SIZE for _ in range(SIZE)]
    for (x, y), steps in reach.items():
        if steps == manhattan((x, y), node):
            rows[y][x] = max(0, PEAK - steps)
    return tuple(tuple(row) for row in rows)


def validate(state: EMState) -> None:
    """Raise `LayoutError` unless the world keeps every invariant of the specification."""
    if len(state.walls) != WALLS or not all(inside(c) for c in state.walls):
        raise LayoutError(f"expected {WALLS} walls inside the grid")
    if not connected(state.walls):
        raise LayoutError("the free tiles are not connected")
    for name, cell in (("node", state.node), ("agent", state.position)):
        if not inside(cell) or cell in state.walls:
            raise LayoutError(f"the {name} is not on a free tile")
    if state.field != compute_field(state.walls, state.node):
        raise LayoutError("the field does not match the walls and the node")


def initial_state(rng: np.random.Generator, withheld: bool = False) -> EMState:
    """Walls first, then the node on a free tile, then the agent on a free tile (possibly
    the node's own tile: the specification only asks for a free one) with a random facing.
    `withheld` marks the withheld-knowledge variant (the same world)."""
    walls = generate_walls(rng)
    free = [c for c in ALL_CELLS if c not in walls]
    node = free[int(rng.integers(len(free)))]
    position = free[int(rng.integers(len(free)))]
    facing = CLOCKWISE[int(rng.integers(len(CLOCKWISE)))]
    state = EMState(
        walls=walls,
        node=node,
        field=compute_field(walls, node),
        position=position,
        facing=facing,
        withheld=withheld,
    )
    validate(state)
    return state


def step(state: EMState, action: Action, step_index: int) -> Transition[EMState]:
    """One action. Events carry no coordinates (nothing an agent may not see)."""
    after = step_index + 1
    if action is Action.MARK:
        success = manhattan(state.position, state.node) <= MARK_RADIUS
        marked = _with(state, action, "marked", after, outcome="success" if success else "failure")
        event = {"type": "mark", "success": success}
        return Transition(
            marked, reward=float(success), terminated=True, success=success, events=(event,)
        )
    if action in (Action.ROTATE_LEFT, Action.ROTATE_RIGHT):
        turn = 1 if action is Action.ROTATE_RIGHT else -1
        facing = CLOCKWISE[(CLOCKWISE.index(state.facing) + turn) % len(CLOCKWISE)]
        rotated = _with(state, action, "rotated", after, facing=facing)
        return Transition(rotated, events=({"type": "rotate", "facing": facing.value},))

    dx, dy = MOVES[action]
    target = (state.position[0] + dx, state.position[1] + dy)
    if not inside(target) or target in state.walls:
        # An illegal move: the agent stays (position and facing unchanged), the step is spent.
        by = "edge" if not inside(target) else "wall"
        blocked = _with(state, action, f"blocked_by_{by}", after)
        return Transition(
            blocked, events=({"type": "blocked", "direction": action.value, "by": by},)
        )
    moved = _with(state, action, "moved", after, position=target, facing=Facing(action.value))
    return Transition(moved, events=({"type": "move", "direction": action.value},))


def _with(state: EMState, action: Action, result: str, after: int, **changes: object) -> EMState:
    return replace(state, last_action=action, last_result=result, last_step=after, **changes)


def oracle_steps(state: EMState) -> int | None:
    """The fewest steps a player who knows the map needs to win: moves to the nearest
    tile within MARK_RADIUS of the node, plus the Mark. None if that exceeds the budget."""
    reach = distances(state.position, state.walls)
    best = min(d for cell, d in reach.items() if manhattan(cell, state.node) <= MARK_RADIUS)
    return best + 1 if best + 1 <= STEP_BUDGET else None
