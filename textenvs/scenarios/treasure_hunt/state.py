"""Treasure Hunt state, actions and observation."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel

from textenvs.core.compass import COMPASS
from textenvs.core.env import ActionSchema

SIZE = 8
STEP_BUDGET = 30
FLOWERS = 10
BOMBS = 1
WINDOW = 5  # the observation window is WINDOW x WINDOW, centred on the agent
START = (0, 0)


class Icon(StrEnum):
    EMPTY = "empty"
    FLOWER = "flower"  # a deadly trap (the inversion)
    BOMB = "bomb"  # the treasure (the inversion)


class Action(StrEnum):
    NORTH = "north"
    SOUTH = "south"
    EAST = "east"
    WEST = "west"
    REVEAL = "reveal"
    WAIT = "wait"


MOVES: dict[Action, tuple[int, int]] = {Action(name): step for name, step in COMPASS.items()}

Cell = tuple[int, int]


@dataclass(frozen=True)
class TreasureState:
    """The full hidden state. `icons[y][x]` is the icon at (x, y)."""

    icons: tuple[tuple[Icon, ...], ...]
    revealed: frozenset[Cell]
    position: Cell

    def icon(self, cell: Cell) -> Icon:
        x, y = cell
        return self.icons[y][x]


# What a window cell shows: an icon once revealed, "unseen" before, "outside" off the grid.
WindowCell = Literal["unseen", "empty", "flower", "bomb", "outside"]


class TreasureObservation(BaseModel):
    """Exactly what the agent sees."""

    x: int
    y: int
    steps_left: int
    #: WINDOW rows, the northernmost first; each row runs west to east. Row r, column c is
    #: the cell (x - 2 + c, y + 2 - r).
    window: list[list[WindowCell]]
    #: the icon on the agent's own tile (always revealed)
    standing_on: Literal["empty", "flower", "bomb"]
    #: "playing", or how the episode ended
    status: Literal["playing", "found_treasure", "hit_trap", "out_of_steps"]


class TreasureHuntAction(ActionSchema):
    """One Treasure Hunt action."""

    action: Literal["north", "south", "east", "west", "reveal", "wait"]

    def to_command(self) -> str:
        return self.action
