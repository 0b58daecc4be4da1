"""EM Anomaly state, actions and observation."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, Literal

from textenvs.core.compass import COMPASS
from textenvs.core.env import ActionSchema
from textenvs.core.variants import VariantObservation

SIZE = 15
WALL_FRACTION = 0.2
WALLS = round(WALL_FRACTION * SIZE * SIZE)  # 45 of the 225 tiles
STEP_BUDGET = 30
PEAK = 3  # FieldLevel = max(0, PEAK - ManhattanDistance) where not shielded
MARK_RADIUS = 1  # Mark succeeds within this Manhattan distance of the node
VIEW = 3  # the observation is a VIEW x VIEW window centred on the agent

Cell = tuple[int, int]


class Action(StrEnum):
    NORTH = "north"
    SOUTH = "south"
    EAST = "east"
    WEST = "west"
    ROTATE_LEFT = "rotate left"
    ROTATE_RIGHT = "rotate right"
    MARK = "mark"


class Facing(StrEnum):
    NORTH = "north"
    EAST = "east"
    SOUTH = "south"
    WEST = "west"


MOVES: dict[Action, tuple[int, int]] = {Action(name): step for name, step in COMPASS.items()}
# Clockwise order: RotateRight steps forward through it, RotateLeft backward.
CLOCKWISE = (Facing.NORTH, Facing.EAST, Facing.SOUTH, Facing.WEST)

# What the last applied action did, as the observation reports it.
LastResult = Literal[
    "start",  # nothing has happened yet
    "moved",
    "blocked_by_wall",
    "blocked_by_edge",
    "rotated",
    "marked",
    "wasted",  # the last command was not understood: nothing happened
]
Outcome = Literal["playing", "success", "failure"]


@dataclass(frozen=True)
class EMState:
    """The full hidden state. `field[y][x]` is the (static) field level at (x, y)."""

    walls: frozenset[Cell]
    node: Cell
    field: tuple[tuple[int, ...], ...]
    position: Cell
    facing: Facing
    #: the last action applied (None at the start) and what it did
    last_action: Action | None = None
    last_result: LastResult = "start"
    #: the env's steps_used right after that action; a later step that left the state
    #: untouched was an unreadable (wasted) command
    last_step: int = 0
    outcome: Outcome = "playing"
    #: the withheld-knowledge variant (reset option `withheld`)
    withheld: bool = False

    def level(self, cell: Cell) -> int:
        x, y = cell
        return self.field[y][x]


# A window cell: the field level 0-3 on a free tile, or what blocks the tile.
ViewCell = Literal[0, 1, 2, 3, "wall", "outside"]


class EMObservation(VariantObservation):
    """Exactly what the agent sees. No coordinates, no map, no node position."""

    #: VIEW rows, the northern row first; each row runs west to east. The agent stands on
    #: the centre cell `view[1][1]`.
    view: list[list[ViewCell]]
    facing: Literal["north", "east", "south", "west"]
    steps_left: int
    #: the command applied last step (None at the start or after a wasted turn)
    last_action: (
        Literal["north", "south", "east", "west", "rotate left", "rotate right", "mark"] | None
    )
    last_result: LastResult
    #: "playing", or how the episode ended
    status: Literal["playing", "marked_success", "marked_failure", "out_of_steps"]
    #: only in the withheld-knowledge variant (reset option `withheld`; absent otherwise):
    #: true, and once the episode has ended the node's Manhattan distance from the tile
    #: the agent ended on (what the variant reveals at the end)
    withheld: bool | None = None
    node_distance: int | None = None
    variant_fields: ClassVar[tuple[str, ...]] = ("withheld", "node_distance")


class EMAnomalyAction(ActionSchema):
    """One EM Anomaly action."""

    action: Literal["north", "south", "east", "west", "rotate left", "rotate right", "mark"]

    def to_command(self) -> str:
        return self.action
