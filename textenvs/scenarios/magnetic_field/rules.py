"""Magnetic Field rules: the encoding rule, world generation, decoration, hints, scoring.

Pure functions, no I/O and no text.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import product
from numbers import Integral

import numpy as np

from textenvs.core.env import Transition
from textenvs.scenarios.magnetic_field.state import (
    BAND_ROWS,
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

# ----- the encoding rule (never shown to the agent; the developer page documents it) -----


def is_line(value: int) -> int:
    """1 for a cell on a field line (a plain line or an intersection), 0 for empty space."""
    return int(value != 0)


def pattern_value(pattern: Pattern) -> int:
    """The fixed rule. High bit: exactly one of the top row's two cells is on a line. Low
    bit: the same for the bottom row. Intersections count as lines, so drawing a crossing
    on a line, or a line through both empty cells of a row, never changes a value."""
    tl, tr, bl, br = map(is_line, pattern)
    return 2 * (tl ^ tr) + (bl ^ br)


# The rule written out for all 81 patterns of 0/1/2: identical in every episode.
TABLE: dict[Pattern, int] = {p: pattern_value(p) for p in product(range(3), repeat=4)}
PATTERNS: tuple[Pattern, ...] = tuple(sorted(TABLE))
MESSAGE_WINDOWS = MESSAGE_BITS // 2  # windows 1-8 carry the message, 9-16 repeat it
# Draws of the other hints before the fallback of showing an undetermined window's pattern.
HINT_DRAWS = 20


@dataclass(frozen=True)
class LevelSpec:
    """What a level changes: only how many hints are shown and how much decoration (which
    the rule ignores) is drawn."""

    #: hints taken from the patterns the windows show (None: every one of them)
    window_hints: int | None
    #: hints shown in all; other table entries fill up to it
    hint_count: int
    #: chance that an empty 3-cell row of a window pair gets a line drawn through it
    fill_rate: float
    #: chance that a line cell in a read row is drawn as an intersection
    crossing_rate: float
    #: stray segments and intersections in the unread rows 2, 5, 8
    gutter_segments: int
    gutter_crossings: int


# The withheld-knowledge variant (reset option `withheld`): these hints, the same in every
# episode, and no others; the rest of the rule is learned from the episodes' ends.
WITHHELD_HINTS: tuple[Pattern, ...] = ((0, 0, 0, 0), (1, 0, 0, 0), (1, 1, 0, 1))

LEVEL_SPECS: dict[int, LevelSpec] = {
    0: LevelSpec(None, 20, 0.0, 0.0, 0, 0),
    1: LevelSpec(8, 12, 0.25, 0.15, 1, 0),
    2: LevelSpec(4, 8, 0.5, 0.3, 2, 2),
    3: LevelSpec(1, 6, 0.75, 0.45, 4, 5),
}


def checked_level(level: object) -> int:
    """The one validation of `level` (reset option, constructor, CLI, service): an integer
    in LEVELS; a bool, a float or a string is an error, never rounded or coerced."""
    if isinstance(level, bool) or not isinstance(level, Integral) or int(level) not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    return int(level)


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


def window_values(message: tuple[int, ...]) -> tuple[int, ...]:
    """The 18 windows' 2-bit values for a message, in raster order."""
    bits = bit_sequence(message)
    return tuple(2 * bits[2 * k] + bits[2 * k + 1] for k in range(len(WINDOWS)))


# ----- world generation -------------------------------------------------------------------


def initial_state(rng: np.random.Generator, level: int, withheld: bool = False) -> MagneticState:
    """Draw order: message, windows, decoration, hints; so a seed gives the same message
    and the same undecorated windows at every level, and with `withheld` (the variant:
    only the fixed `WITHHELD_HINTS`, no guarantee that the observation fixes the
    message, and the check bits' form not told)."""
    level = checked_level(level)
    spec = LEVEL_SPECS[level]
    message = tuple(int(d) for d in rng.integers(16, size=SLOTS))
    grid = decorate(draw_windows(rng, window_values(message)), rng, spec)
    shown = list(WITHHELD_HINTS) if withheld else choose_hints(grid, rng, spec)
    return MagneticState(
        grid=grid,
        message=message,
        hints=tuple((p, TABLE[p]) for p in shown),
        level=level,
        withheld=withheld,
    )


def draw_windows(rng: np.random.Generator, values: tuple[int, ...]) -> Grid:
    """Line cells (1) for the 18 windows. Windows come in overlapping pairs (columns c,
    c+1 and c+1, c+2): in each row of a pair the first cell is drawn at random and the
    next two follow from the two windows' bits for that row."""
    cells = [[0] * SIZE for _ in range(SIZE)]
    for k in range(0, len(WINDOWS), 2):
        row, col = WINDOWS[k]
        for offset, shift in ((0, 1), (1, 0)):  # the top row holds the high bit
            first = int(rng.integers(2))
            middle = first ^ (values[k] >> shift & 1)
            last = middle ^ (values[k + 1] >> shift & 1)
            cells[row + offset][col : col + 3] = [first, middle, last]
    return _freeze(cells)


def decorate(grid: Grid, rng: np.random.Generator, spec: LevelSpec) -> Grid:
    """Decoration the rule ignores: lines through empty 3-cell rows of a window pair (both
    cells of each window's row become lines), intersections drawn on line cells, and stray
    lines and intersections in the unread rows 2, 5 and 8."""
    out = [list(row) for row in grid]
    read_rows = [r + offset for r in BAND_ROWS for offset in (0, 1)]
    if spec.fill_rate:
        for row in read_rows:
            for col in range(0, SIZE, 3):
                if out[row][col : col + 3] == [0, 0, 0] and rng.random() < spec.fill_rate:
                    out[row][col : col + 3] = [1, 1, 1]
    if spec.crossing_rate:
        for row in read_rows:
            for col in range(SIZE):
                if out[row][col] == 1 and rng.random() < spec.crossing_rate:
                    out[row][col] = 2
    for _ in range(spec.gutter_segments):
        row = GUTTER_ROWS[int(rng.integers(len(GUTTER_ROWS)))]
        length = int(rng.integers(3, 7))
        start = int(rng.integers(SIZE - length + 1))
        for col in range(start, start + length):
            # A line drawn over another line makes an intersection.
            out[row][col] = 1 if out[row][col] == 0 else 2
    for _ in range(spec.gutter_crossings):
        row = GUTTER_ROWS[int(rng.integers(len(GUTTER_ROWS)))]
        out[row][int(rng.integers(SIZE))] = 2
    return _freeze(out)


def choose_hints(grid: Grid, rng: np.random.Generator, spec: LevelSpec) -> list[Pattern]:
    """The example entries shown, sorted: `window_hints` of the patterns the windows show,
    other entries up to `hint_count`; then, only if the observation would not yet fix the
    message (see `undetermined_windows`), the patterns of undetermined message windows."""
    used = sorted({window(grid, r, c) for r, c in WINDOWS})
    if spec.window_hints is None or spec.window_hints >= len(used):
        shown = list(used)
    else:
        picks = rng.choice(len(used), size=spec.window_hints, replace=False)
        shown = [used[int(i)] for i in sorted(picks)]
    others = [p for p in PATTERNS if p not in shown]
    count = max(0, spec.hint_count - len(shown))
    for _ in range(HINT_DRAWS):
        extra = [others[int(i)] for i in rng.choice(len(others), size=count, replace=False)]
        if not undetermined_windows(grid, shown + extra):
            break
    shown += extra
    # Rarely needed (see the docs): at most 8 rounds, each settles the window it shows.
    while missing := undetermined_windows(grid, shown):
        shown.append(window(grid, *WINDOWS[missing[0]]))
    return sorted(set(shown))


# ----- decodability from the observation ----------------------------------------------------
#
# The agent is told only that each bit follows from simple properties of a window's cells.
# The family checked here: every bit is a parity (XOR) of some of the 8 cell properties
# "cell i is on a line" and "cell i is an intersection", optionally negated. Such a rule
# is a linear map over GF(2) of the window's property vector (plus a constant), so the
# message is fixed by the observation when each message window's vector lies in the span
# of the hint vectors and of the differences between each message window and its check
# copy (which must give the same bits). The true rule is in the family.


PROPERTY_BITS = 9


def property_vector(pattern: Pattern) -> int:
    """Bit i: cell i is on a line; bit 4+i: cell i is an intersection; bit 8: constant."""
    vector = 1 << (PROPERTY_BITS - 1)
    for i, value in enumerate(pattern):
        vector |= is_line(value) << i | int(value == 2) << (4 + i)
    return vector


PROPERTY_VECTORS: dict[Pattern, int] = {p: property_vector(p) for p in PATTERNS}


def _reduce(basis: list[int], vector: int) -> int:
    """`vector` minus its part in the span of `basis` (distinct leading bits, descending)."""
    for row in basis:
        reduced = vector ^ row
        if reduced < vector:  # clears the row's leading bit
            vector = reduced
    return vector


def undetermined_windows(grid: Grid, hints: list[Pattern]) -> list[int]:
    """Message windows (0-7) whose bits some rule of the family above could read
    differently while agreeing with every hint and every check copy."""
    vectors = [PROPERTY_VECTORS[window(grid, r, c)] for r, c in WINDOWS]
    rows = [PROPERTY_VECTORS[p] for p in hints]
    rows += [vectors[k] ^ vectors[k + MESSAGE_WINDOWS] for k in range(MESSAGE_WINDOWS)]
    basis: list[int] = []
    for row in rows:
        if reduced := _reduce(basis, row):
            basis = sorted([*basis, reduced], reverse=True)
            if len(basis) == PROPERTY_BITS:  # full rank: every window is determined
                return []
    return [k for k in range(MESSAGE_WINDOWS) if _reduce(basis, vectors[k])]


def _freeze(cells: list[list[int]]) -> Grid:
    return tuple(tuple(row) for row in cells)


# ----- steps and scoring --------------------------------------------------------------------


def slot_right(state: MagneticState) -> tuple[bool, ...]:
    return tuple(slot == HEX[d] for slot, d in zip(state.slots, state.message, strict=True))


def correct_count(state: MagneticState) -> int:
    return sum(slot_right(state))


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
