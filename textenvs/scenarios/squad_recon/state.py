"""Squad Recon state, orders and observation."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from textenvs.core.compass import COMPASS
from textenvs.core.env import ActionSchema

SIZE = 15
STEP_BUDGET = 40
SENSOR_RADIUS = 3  # a 7x7 window: Chebyshev distance <= 3 from the squad
SQUADS = ("A", "B", "C")
# Predetermined start cells near the south-west corner (x east, y north).
STARTS: tuple[tuple[int, int], ...] = ((0, 0), (1, 0), (0, 1))
SQUAD_STRENGTH = (1, 4)  # inclusive
CAMP_STRENGTH = (2, 6)  # inclusive
CAMPS = 2
REWARD_PER_CAMP = 0.5

Cell = tuple[int, int]


class Terrain(StrEnum):
    OPEN = "open"
    WALL = "wall"  # blocks movement only
    FOREST = "forest"  # blocks movement and sight


class Order(StrEnum):
    HOLD = "hold"
    NORTH = "north"
    SOUTH = "south"
    EAST = "east"
    WEST = "west"
    ATTACK = "attack"


MOVES: dict[Order, Cell] = {Order(name): step for name, step in COMPASS.items()}
NEIGHBOURS: tuple[Cell, ...] = tuple(MOVES.values())


@dataclass(frozen=True)
class Squad:
    name: str
    position: Cell
    strength: int
    active: bool = True


@dataclass(frozen=True)
class Camp:
    position: Cell
    strength: int
    standing: bool = True


@dataclass(frozen=True)
class StepEvent:
    """One thing that happened in a step (kept in the state so the next observation can
    report it; `as_dict` is the JSON form that goes to `info["events"]`)."""

    kind: str
    squads: tuple[str, ...] = ()
    cell: Cell | None = None
    direction: str = ""
    reason: str = ""
    strength: int = 0
    camp_strength: int = 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind}
        if self.squads:
            out["squads"] = list(self.squads)
        if self.cell is not None:
            out["at"] = list(self.cell)
        for key in ("direction", "reason", "strength", "camp_strength"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True)
class ReconState:
    """The full hidden state. `terrain[y][x]` is the terrain at (x, y)."""

    terrain: tuple[tuple[Terrain, ...], ...]
    squads: tuple[Squad, ...]
    camps: tuple[Camp, ...]
    #: every cell some squad's sensor has seen (terrain never changes, so it stays known)
    seen: frozenset[Cell]
    #: what the last step did, and the step count after it (reported once, not after a
    #: wasted turn)
    last_events: tuple[StepEvent, ...] = ()
    report_step: int = -1

    def at(self, cell: Cell) -> Terrain:
        x, y = cell
        return self.terrain[y][x]

    @property
    def eliminated(self) -> int:
        return sum(not camp.standing for camp in self.camps)

    def standing_camp_at(self, cell: Cell) -> Camp | None:
        for camp in self.camps:
            if camp.standing and camp.position == cell:
                return camp
        return None


@dataclass(frozen=True)
class Orders:
    """One command: explicit orders per squad, sorted by squad name. A squad without an
    order holds. `everyone` marks orders that came from `all <order>` (they are silently
    skipped for destroyed squads instead of being reported)."""

    orders: tuple[tuple[str, Order], ...]
    everyone: Order | None = None

    def order_for(self, squad: str) -> Order | None:
        for name, order in self.orders:
            if name == squad:
                return order
        return None

    def to_command(self) -> str:
        if self.everyone is not None and len(self.orders) == len(SQUADS):
            return f"all {self.everyone.value}"
        if not self.orders:
            return "all hold"
        return "; ".join(f"{name} {order.value}" for name, order in self.orders)


# ----- what the agent sees --------------------------------------------------------------

# Map symbols, one character per cell.
SYMBOLS = {
    "unseen": "?",
    "open": ".",
    "wall": "#",
    "forest": "T",
    "camp": "E",
    "eliminated": "x",
    "several": "*",
}


class SquadView(BaseModel):
    name: str
    x: int
    y: int
    strength: int
    status: Literal["active", "destroyed"]


class CampView(BaseModel):
    """A camp some sensor has seen (unseen camps are never listed)."""

    x: int
    y: int
    strength: int
    status: Literal["standing", "eliminated"]


class ReconObservation(BaseModel):
    """Exactly what the agent sees."""

    squads: list[SquadView]
    #: SIZE strings, the northernmost row (y=14) first, each running west (x=0) to east.
    #: Row r, column c is the cell (c, 14 - r). Symbols: ? unseen, . open, # wall,
    #: T forest, E enemy camp, x eliminated camp (open ground), A/B/C an active squad,
    #: * several active squads on one cell.
    map: list[str]
    camps: list[CampView]
    eliminated: int
    total_camps: int
    steps_left: int
    total_strength: int
    #: what the last step did, one sentence each (empty after a wasted turn)
    report: list[str]
    status: Literal["playing", "won", "all_destroyed", "out_of_steps"]


OrderName = Literal["hold", "north", "south", "east", "west", "attack"]


class SquadReconAction(ActionSchema):
    """Orders for this step; a squad left out holds."""

    a: OrderName | None = Field(default=None, description="order for squad A")
    b: OrderName | None = Field(default=None, description="order for squad B")
    c: OrderName | None = Field(default=None, description="order for squad C")

    def to_command(self) -> str:
        given = [(n, o) for n, o in zip(SQUADS, (self.a, self.b, self.c), strict=True) if o]
        if not given:
            return "all hold"
        return "; ".join(f"{name} {order}" for name, order in given)
