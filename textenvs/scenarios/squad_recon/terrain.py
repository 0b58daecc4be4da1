"""Squad Recon battlefield: map generation, reachability and line of sight (pure)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from fractions import Fraction
from functools import cache, lru_cache

import numpy as np

from textenvs.scenarios.squad_recon.state import (
    CAMPS,
    NEIGHBOURS,
    SENSOR_RADIUS,
    SIZE,
    STARTS,
    Cell,
    Terrain,
)

Grid = tuple[tuple[Terrain, ...], ...]

SPAWN_CLEAR = 4  # cells with x < 4 and y < 4 are always open ground (the spawn area)
# No camp in x < 5 and y < 5: that square holds every start window, so no camp is seen
# before a squad moves.
HIDDEN_ZONE = 5
CAMP_GAP = 3  # camps are >= 3 apart (Manhattan), so no cell is adjacent to both
MAX_ATTEMPTS = 50  # map attempts before the (never observed) all-open fallback
WALL_SEGMENTS = (3, 5)  # inclusive ranges
WALL_LENGTH = (3, 6)
FOREST_PATCHES = (4, 6)
FOREST_SIZE = (3, 7)


def inside(cell: Cell) -> bool:
    return 0 <= cell[0] < SIZE and 0 <= cell[1] < SIZE


def _in_spawn(cell: Cell) -> bool:
    return cell[0] < SPAWN_CLEAR and cell[1] < SPAWN_CLEAR


def _draw(rng: np.random.Generator, bounds: tuple[int, int]) -> int:
    return int(rng.integers(bounds[0], bounds[1] + 1))


def random_terrain(rng: np.random.Generator) -> Grid:
    """Straight wall segments (partial barriers) and grown forest patches."""
    cells = [[Terrain.OPEN] * SIZE for _ in range(SIZE)]

    def put(cell: Cell, kind: Terrain) -> None:
        if inside(cell) and not _in_spawn(cell):
            cells[cell[1]][cell[0]] = kind

    for _ in range(_draw(rng, WALL_SEGMENTS)):
        x, y = int(rng.integers(SIZE)), int(rng.integers(SIZE))
        dx, dy = ((1, 0), (0, 1))[int(rng.integers(2))]
        for k in range(_draw(rng, WALL_LENGTH)):
            put((x + k * dx, y + k * dy), Terrain.WALL)
    for _ in range(_draw(rng, FOREST_PATCHES)):
        patch = [(int(rng.integers(SIZE)), int(rng.integers(SIZE)))]
        size = _draw(rng, FOREST_SIZE)
        for _ in range(size * 4):  # bounded growth: a patch may end up smaller
            if len(patch) >= size:
                break
            bx, by = patch[int(rng.integers(len(patch)))]
            dx, dy = NEIGHBOURS[int(rng.integers(4))]
            grown = (bx + dx, by + dy)
            if inside(grown) and grown not in patch:
                patch.append(grown)
        for cell in patch:
            put(cell, Terrain.FOREST)
    return tuple(tuple(row) for row in cells)


def reachable(grid: Grid, starts: Iterable[Cell], blocked: Iterable[Cell] = ()) -> set[Cell]:
    """Open cells a squad can walk to from `starts` (4-neighbour moves), avoiding `blocked`."""
    stop = set(blocked)
    seen = {s for s in starts if grid[s[1]][s[0]] is Terrain.OPEN and s not in stop}
    queue = deque(seen)
    while queue:
        x, y = queue.popleft()
        for dx, dy in NEIGHBOURS:
            nxt = (x + dx, y + dy)
            if (
                inside(nxt)
                and nxt not in seen
                and nxt not in stop
                and grid[nxt[1]][nxt[0]] is Terrain.OPEN
            ):
                seen.add(nxt)
                queue.append(nxt)
    return seen


def place_camps(rng: np.random.Generator, grid: Grid) -> tuple[Cell, ...] | None:
    """Two camp cells on open ground reachable from the spawn, hidden at the start, apart,
    each with a neighbour reachable while both camps stand (camps block movement)."""
    open_reach = reachable(grid, STARTS)
    candidates = sorted(c for c in open_reach if not (c[0] < HIDDEN_ZONE and c[1] < HIDDEN_ZONE))
    chosen: list[Cell] = []
    for _ in range(CAMPS):
        allowed = [c for c in candidates if all(_manhattan(c, o) >= CAMP_GAP for o in chosen)]
        if not allowed:
            return None
        chosen.append(allowed[int(rng.integers(len(allowed)))])
    walkable = reachable(grid, STARTS, blocked=chosen)
    for camp in chosen:
        if not any((camp[0] + dx, camp[1] + dy) in walkable for dx, dy in NEIGHBOURS):
            return None
    return tuple(chosen)


def generate(rng: np.random.Generator) -> tuple[Grid, tuple[Cell, ...], int]:
    """(terrain, camp cells, attempts used). Retries a bounded number of times; the
    fallback, an all-open field, always admits valid camps."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        grid = random_terrain(rng)
        camps = place_camps(rng, grid)
        if camps is not None:
            return grid, camps, attempt
    grid = tuple(tuple([Terrain.OPEN] * SIZE) for _ in range(SIZE))
    camps = place_camps(rng, grid)
    assert camps is not None  # an open 15x15 field always has room
    return grid, camps, MAX_ATTEMPTS + 1


def _manhattan(a: Cell, b: Cell) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


# ----- line of sight ---------------------------------------------------------------------


def _axis_interval(d: int, c: int) -> tuple[Fraction, Fraction] | None:
    """The open interval of t in which |t*d - c| < 1/2 (None: never; the whole line
    when d == 0 and c == 0)."""
    half = Fraction(1, 2)
    if d == 0:
        return (Fraction(-10), Fraction(10)) if abs(c) < half else None
    lo, hi = (c - half) / d, (c + half) / d
    return (min(lo, hi), max(lo, hi))


@cache
def between(dx: int, dy: int) -> tuple[Cell, ...]:
    """Offsets of the cells strictly between (0,0) and (dx,dy) whose interior the straight
    line between the two cell centres crosses. A line through a corner where two cells
    touch crosses neither of them."""
    out = []
    for cx in range(min(0, dx), max(0, dx) + 1):
        for cy in range(min(0, dy), max(0, dy) + 1):
            if (cx, cy) in ((0, 0), (dx, dy)):
                continue
            ix, iy = _axis_interval(dx, cx), _axis_interval(dy, cy)
            if ix is None or iy is None:
                continue
            lo = max(ix[0], iy[0], Fraction(0))
            hi = min(ix[1], iy[1], Fraction(1))
            if lo < hi:
                out.append((cx, cy))
    return tuple(out)


# The window's offsets in the order `visible_cells` has always added them (dx, then dy),
# so the frozensets it builds are identical, iteration order included.
_WINDOW: tuple[Cell, ...] = tuple(
    (dx, dy)
    for dx in range(-SENSOR_RADIUS, SENSOR_RADIUS + 1)
    for dy in range(-SENSOR_RADIUS, SENSOR_RADIUS + 1)
)


@cache
def _shadows() -> tuple[int, ...]:
    """Per window offset (by its index in `_WINDOW`), a bit mask of the targets whose
    sightline passes through it (`between`): what a forest there hides."""
    index = {offset: i for i, offset in enumerate(_WINDOW)}
    masks = [0] * len(_WINDOW)
    for target in _WINDOW:
        for blocker in between(*target):
            masks[index[blocker]] |= 1 << index[target]
    return tuple(masks)


@lru_cache(maxsize=SIZE * SIZE)
def _window(origin: Cell) -> tuple[tuple[int, Cell], ...]:
    """(offset index, cell) for each window cell around `origin` that lies in the grid."""
    ox, oy = origin
    return tuple(
        (i, (ox + dx, oy + dy))
        for i, (dx, dy) in enumerate(_WINDOW)
        if 0 <= ox + dx < SIZE and 0 <= oy + dy < SIZE
    )


def visible_cells(is_forest: Callable[[Cell], bool], origin: Cell) -> frozenset[Cell]:
    """Cells of the 7x7 window around `origin` that the squad there sees: in the grid,
    with no forest strictly between (a forest cell itself is seen; walls do not block)."""
    # Every `between` cell of an in-grid target lies in the grid and the window, so asking
    # each in-grid window cell once and or-ing the shadows of the forests is the same test
    # as walking every sightline (49 walks of up to 5 cells each).
    shadows = _shadows()
    cells = _window(origin)
    hidden = 0
    for i, cell in cells:
        if is_forest(cell):
            hidden |= shadows[i]
    # Built as a set first, in window order, as it always was: the same table layout, so
    # the same iteration order downstream.
    out = set()
    for i, cell in cells:
        if not hidden >> i & 1:
            out.add(cell)
    return frozenset(out)
