"""Magnetic Field state, actions, observation, and the fixed reading layout."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar, Literal

from pydantic import BaseModel

from textenvs.core.env import ActionSchema
from textenvs.core.variants import VariantObservation

SIZE = 9
STEP_BUDGET = 40
SLOTS = 4
CREDIT_PER_CHAR = 0.25
LEVELS = (0, 1, 2, 3)
HEX = "0123456789ABCDEF"

# The block layout (see the env docstring): three bands of two rows; in each band the
# columns form three 3-wide groups, each read as two 2x2 windows sharing the middle
# column. 3 bands x 6 windows = 18 windows x 2 bits = 36 bits. Rows 2, 5, 8 are never
# read.
BAND_ROWS = (0, 3, 6)
WINDOW_COLS = (0, 1, 3, 4, 6, 7)
GUTTER_ROWS = (2, 5, 8)
# Top-left corner (row, col) of each window, in raster order.
WINDOWS: tuple[tuple[int, int], ...] = tuple((r, c) for r in BAND_ROWS for c in WINDOW_COLS)
BITS = 2 * len(WINDOWS)  # 36
MESSAGE_BITS = 4 * SLOTS  # 16

# A 2x2 pattern: (top-left, top-right, bottom-left, bottom-right), each 0, 1 or 2.
Pattern = tuple[int, int, int, int]
Grid = tuple[tuple[int, ...], ...]


class Action(IntEnum):
    """The spec's 19 actions, numbered as the spec numbers them."""

    HEX_0 = 0
    HEX_1 = 1
    HEX_2 = 2
    HEX_3 = 3
    HEX_4 = 4
    HEX_5 = 5
    HEX_6 = 6
    HEX_7 = 7
    HEX_8 = 8
    HEX_9 = 9
    HEX_A = 10
    HEX_B = 11
    HEX_C = 12
    HEX_D = 13
    HEX_E = 14
    HEX_F = 15
    RIGHT = 16
    LEFT = 17
    SUBMIT = 18

    @property
    def is_hex(self) -> bool:
        return self.value < 16

    @property
    def char(self) -> str:
        return HEX[self.value]

    @property
    def command(self) -> str:
        """The canonical command text for this action."""
        if self.is_hex:
            return f"enter {self.char}"
        return self.name.lower()


@dataclass(frozen=True)
class MagneticState:
    """The full hidden state. `grid[r][c]` is row r (0 = top), column c (0 = left)."""

    grid: Grid
    message: tuple[int, ...]  # the four hex digits encoded by bits 1-16
    hints: tuple[tuple[Pattern, int], ...]  # shown pattern -> 2-bit value, sorted
    level: int
    cursor: int = 0
    slots: tuple[str | None, ...] = (None,) * SLOTS
    #: None while playing; "submitted" or "out_of_steps" once scored
    ended: Literal["submitted", "out_of_steps"] | None = None
    #: the withheld-knowledge variant (reset option `withheld`)
    withheld: bool = False

    @property
    def answer(self) -> str:
        return "".join(s or "_" for s in self.slots)


class Hint(BaseModel):
    """One revealed table entry: `pattern` is 'ab/cd' (top row a b, bottom row c d)."""

    pattern: str
    bits: str


class MagneticObservation(VariantObservation):
    """Exactly what the agent sees."""

    #: 9 rows, the top row first; each row left to right; 0 empty, 1 line, 2 intersection
    grid: list[list[int]]
    #: the index of the next step while playing (0-39); once the episode has ended, the
    #: index of its last step (so always 0-39)
    step_index: int
    steps_left: int
    #: the selected slot, 0-3 (slot 1-4 in the text)
    cursor: int
    #: the four slots, left to right; null while empty
    slots: list[str | None]
    #: example pattern -> bits entries of the fixed table, sorted by pattern: at level 0
    #: every pattern the windows use (and a few others), fewer at higher levels
    hints: list[Hint]
    #: difficulty level 0-3 (fewer hints, more decoration; the encoding never changes)
    level: int
    status: Literal["playing", "submitted", "out_of_steps"]
    #: set once the episode has ended: the scored answer, the true message, how many
    #: characters were right, which slots were right, and the 18 windows' true bits in
    #: reading order (so an agent playing several episodes can learn the fixed rule)
    answer: str | None = None
    message: str | None = None
    correct: int | None = None
    slot_right: list[bool] | None = None
    window_bits: list[str] | None = None
    #: only in the withheld-knowledge variant (reset option `withheld`; absent otherwise)
    withheld: bool | None = None
    variant_fields: ClassVar[tuple[str, ...]] = ("withheld",)


class MagneticFieldAction(ActionSchema):
    """One Magnetic Field action: a hex digit for the selected slot, a cursor move, or
    submit (finalize the four slots)."""

    action: Literal[
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "A", "B", "C", "D", "E", "F",
        "right", "left", "submit",
    ]  # fmt: skip

    def to_command(self) -> str:
        if len(self.action) == 1:
            return f"enter {self.action}"
        return self.action
