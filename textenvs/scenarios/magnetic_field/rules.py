"""Magnetic Field rules: the fixed table, world generation, decoding, steps, scoring.

Pure functions, no I/O and no text.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

import numpy as np

from textenvs.core.env import Transition
from textenvs.scenarios.magnetic_field.state import (
    BITS,
    CREDIT_PER_CHAR,
    GUTTER_ROWS,
    HEX,
    LEVELS,
    MESSAGE_BITS,
    SIZE,
    SLOTS,
    WINDOWS,
    Action,
    Grid,
    MagneticState,
    Pattern,
)

# The hidden pattern -> 2-bit table, identical in every episode. Row L = 3*tl + bl (the
# pattern's left column), column R = 3*tr + br (its right column). Each row holds every
# value 0-3 at least twice, so whatever left column a window inherits from its
# overlapping neighbour, some right column gives any wanted value: every message can be
# drawn. (Built once from sha256 orderings; written out so it can never drift.)
_TABLE_ROWS = (
    "112030230",
    "120231013",
    "132230012",
    "313030122",
    "330211002",
    "103321021",
    "301123022",
    "230133210",
    "011203302",
)
TABLE: dict[Pattern, int] = {
    (tl, tr, bl, br): int(_TABLE_ROWS[3 * tl + bl][3 * tr + br])
    for tl, tr, bl, br in product(range(3), repeat=4)
}
PATTERNS: tuple[Pattern, ...] = tuple(sorted(TABLE))
BY_VALUE: dict[int, tuple[Pattern, ...]] = {
    v: tuple(p for p in PATTERNS if TABLE[p] == v) for v in range(4)
}
# Hints shown per episode: every pattern the 18 windows use (at most 18) plus other table
# entries up to this count, so the number shown says nothing about the grid.
HINT_COUNT = 20
# Decoration per level: (segments, intersections), all in the gutter rows 2, 5, 8.
DECORATION = {0: (0, 0), 1: (1, 0), 2: (2, 2), 3: (4, 5)}


def window(grid: Grid, row: int, col: int) -> Pattern:
    """The 2x2 pattern whose top-left cell is (row, col)."""
    return (grid[row][col], grid[row][col + 1], grid[row + 1][col], grid[row + 1][col + 1])


def decode(grid: Grid, table: dict[Pattern, int] = TABLE) -> tuple[int, ...]:
    """The 36-bit sequence: each window in raster order gives 2 bits, high bit first."""
    bits: list[int] = []
    for row, col in WINDOWS:
        value = table[window(grid, row, col)]
        bits += [value >> 1, value & 1]
    return tuple(bits)


def message_of(bits: tuple[int, ...]) -> tuple[int, ...]:
    """Bits 1-16 as four hex digits, most significant bit first."""
    return tuple(
        int("".join(map(str, bits[4 * i : 4 * i + 4])), 2) for i in range(MESSAGE_BITS // 4)
    )


def bit_sequence(message: tuple[int, ...]) -> tuple[int, ...]:
    """The 36 bits for a message: bits 1-16 the message, bits 17-32 the message again (a
    check copy), bits 33-36 the sum of the four digits mod 16 (a checksum)."""
    digits = [*message, *message, sum(message) % 16]
    bits = tuple(int(b) for d in digits for b in format(d, "04b"))
    assert len(bits) == BITS
    return bits


def initial_state(rng: np.random.Generator, level: int) -> MagneticState:
    """Draw order: message, window patterns, hint padding, then decoration, so the same
    seed gives the same message, windows and hints at every level."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    message = tuple(int(d) for d in rng.integers(16, size=SLOTS))
    bits = bit_sequence(message)
    values = [2 * bits[2 * k] + bits[2 * k + 1] for k in range(len(WINDOWS))]
    cells = [[0] * SIZE for _ in range(SIZE)]
    # Windows come in overlapping pairs (columns c, c+1 and c+1, c+2).
    for k in range(0, len(WINDOWS), 2):
        row, col = WINDOWS[k]
        left = _pick(rng, BY_VALUE[values[k]])
        middle = (left[1], left[3])
        right = _pick(
            rng,
            tuple(p for p in BY_VALUE[values[k + 1]] if (p[0], p[2]) == middle),
        )
        cells[row][col : col + 3] = [left[0], left[1], right[1]]
        cells[row + 1][col : col + 3] = [left[2], left[3], right[3]]
    grid = _freeze(cells)
    used = {window(grid, r, c) for r, c in WINDOWS}
    others = [p for p in PATTERNS if p not in used]
    extra = rng.choice(len(others), size=HINT_COUNT - len(used), replace=False)
    shown = sorted(used | {others[int(i)] for i in extra})
    decorated = decorate(cells, rng, level)
    return MagneticState(
        grid=decorated,
        message=message,
        hints=tuple((p, TABLE[p]) for p in shown),
        level=level,
    )


def _pick(rng: np.random.Generator, options: tuple[Pattern, ...]) -> Pattern:
    assert options, "the table guarantees a completion for every left column"
    return options[int(rng.integers(len(options)))]


def _freeze(cells: list[list[int]]) -> Grid:
    return tuple(tuple(row) for row in cells)


def decorate(cells: list[list[int]], rng: np.random.Generator, level: int) -> Grid:
    """Stray field lines and intersections in the gutter rows, which no window reads."""
    out = [list(row) for row in cells]
    segments, crossings = DECORATION[level]
    for _ in range(segments):
        row = GUTTER_ROWS[int(rng.integers(len(GUTTER_ROWS)))]
        length = int(rng.integers(3, 7))
        start = int(rng.integers(SIZE - length + 1))
        for col in range(start, start + length):
            # A line drawn over another line makes an intersection.
            out[row][col] = 1 if out[row][col] == 0 else 2
    for _ in range(crossings):
        row = GUTTER_ROWS[int(rng.integers(len(GUTTER_ROWS)))]
        out[row][int(rng.integers(SIZE))] = 2
    return _freeze(out)


def correct_count(state: MagneticState) -> int:
    return sum(slot == HEX[d] for slot, d in zip(state.slots, state.message, strict=True))


def score(state: MagneticState, ended: str) -> Transition[MagneticState]:
    """Final evaluation: 0.25 per slot holding the right character."""
    correct = correct_count(state)
    event = {
        "type": "evaluated",
        "answer": state.answer,
        "message": "".join(HEX[d] for d in state.message),
        "correct": correct,
    }
    return Transition(
        replace(state, ended=ended),  # type: ignore[arg-type]
        reward=CREDIT_PER_CHAR * correct,
        terminated=ended == "submitted",
        success=correct == SLOTS,
        events=(event,),
    )


def step(state: MagneticState, action: Action) -> Transition[MagneticState]:
    """One action. The grid never changes; only the slots and the cursor do."""
    if action.is_hex:
        slots = list(state.slots)
        before, slots[state.cursor] = slots[state.cursor], action.char
        event = {"type": "enter", "slot": state.cursor, "char": action.char, "replaced": before}
        return Transition(replace(state, slots=tuple(slots)), events=(event,))
    if action is Action.SUBMIT:
        return score(state, "submitted")
    delta = 1 if action is Action.RIGHT else -1
    cursor = (state.cursor + delta) % SLOTS
    event = {"type": "cursor", "direction": action.name.lower(), "from": state.cursor, "to": cursor}
    return Transition(replace(state, cursor=cursor), events=(event,))
