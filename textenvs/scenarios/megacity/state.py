"""Megacity state, actions and observation.

Cells are `(col, row)` with col 0-4 for A-E (west to east) and row 0-4 for 1-5 (south to
north); `cell_name((1, 2)) == "B3"`. Grids are stored row-major, `grid[row][col]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, Field, StringConstraints, model_validator

from textenvs.core.compass import COMPASS
from textenvs.core.env import ActionSchema
from textenvs.core.variants import VariantObservation
from textenvs.scenarios.megacity.parameters import PHYSICS, Physics

SIZE = 5
COLS = "ABCDE"
STEP_BUDGET = 40
TARGET_DISTRICTS = 6
INTEGRITY_THRESHOLD = 80  # victory needs integrity > 80
AIR_THRESHOLD = 60  # victory needs air > 60
START_INTEGRITY = 100
START_AIR = 85
START_POWER = 50

Cell = tuple[int, int]
Vec = tuple[int, int]
Grid = tuple[tuple[int, ...], ...]
VecGrid = tuple[tuple[Vec, ...], ...]

DIRECTIONS: dict[str, Vec] = dict(COMPASS)
BASIC_MATERIALS = ("timber", "basalt")
ADVANCED_MATERIALS = ("mycelium", "lodestone")
MATERIALS = BASIC_MATERIALS + ADVANCED_MATERIALS
KINDS = ("excavate", "support", "vent", "conduit", "district", "research", "scan", "wait")


def cell_name(cell: Cell) -> str:
    return f"{COLS[cell[0]]}{cell[1] + 1}"


def all_cells() -> list[Cell]:
    """Every cell, A1 B1 ... E1 A2 ... E5 (row by row from the south)."""
    return [(c, r) for r in range(SIZE) for c in range(SIZE)]


def adjacent(a: Cell, b: Cell) -> bool:
    return abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1


def neighbours(cell: Cell) -> list[Cell]:
    c, r = cell
    near = [(c, r - 1), (c - 1, r), (c + 1, r), (c, r + 1)]
    return [(x, y) for x, y in near if 0 <= x < SIZE and 0 <= y < SIZE]


@dataclass(frozen=True)
class Action:
    """One parsed command. `cells` holds 1 cell (or 1-3 for a conduit)."""

    kind: str
    cells: tuple[Cell, ...] = ()
    material: str | None = None
    direction: str | None = None

    def command(self) -> str:
        parts = [self.kind, *(cell_name(c) for c in self.cells)]
        if self.material:
            parts.append(self.material)
        if self.direction:
            parts.append(self.direction)
        return " ".join(parts)


@dataclass(frozen=True)
class Seam:
    """A straight mineral seam; `cells` run upstream to downstream along `direction`."""

    cells: tuple[Cell, ...]
    direction: str


@dataclass(frozen=True)
class MegacityState:
    """The full state. Geology and the base airflow are fixed per episode."""

    stress: Grid
    seams: tuple[Seam, ...]
    faults: tuple[Cell, ...]
    base_flow: VecGrid  # the airflow field before reversals and shafts
    chambers: tuple[Cell, ...] = ()
    supports: tuple[tuple[Cell, str], ...] = ()
    districts: tuple[Cell, ...] = ()
    vents: tuple[tuple[Cell, str], ...] = ()
    conduits: tuple[Cell, ...] = ()
    integrity: int = START_INTEGRITY
    air: int = START_AIR
    power: int = START_POWER
    power_net: int = 0  # change of storage over the last step (costs included)
    brownout: bool = False  # the last step's demand was not met
    #: districts that could not run after the last step, with the reason
    offline: tuple[tuple[Cell, str], ...] = ()
    #: why victory is forfeited ("integrity 78 at step 23"); empty while thresholds hold
    breach: str = ""
    steps: int = 0  # completed steps
    #: steps that ended with six running districts and no breach (plan quality)
    six_running: int = 0
    research: int = 0  # research points
    scanned: bool = False
    power_bonus_paid: bool = False
    outcome: str = "playing"  # playing, victory, collapse, suffocation
    report: tuple[str, ...] = ()  # what the last step did, in words
    #: the withheld-knowledge variant (reset option `withheld`): research texts are
    #: shown only once the episode has ended, every rule's then
    withheld: bool = False
    #: the numbers of the physics this world runs on (a variant switches a mechanism off);
    #: not in the repr, which pins the published maps (tests/scenarios/test_megacity_levels)
    physics: Physics = field(default=PHYSICS, repr=False)

    def stress_at(self, cell: Cell) -> int:
        return self.stress[cell[1]][cell[0]]

    def support_at(self, cell: Cell) -> str | None:
        for where, material in self.supports:
            if where == cell:
                return material
        return None


_STATE_FIELDS = frozenset(f.name for f in fields(MegacityState))


def evolve(state: MegacityState, **changes: Any) -> MegacityState:
    """`dataclasses.replace(state, **changes)` at a fifth of the cost (a step makes two or
    three): copies the fields without re-running `__init__` field by field, which is
    equivalent because MegacityState has no `__post_init__`, factories or init-only
    fields. Unknown names are still an error."""
    if not changes.keys() <= _STATE_FIELDS:
        raise TypeError(f"MegacityState has no field(s) {sorted(changes.keys() - _STATE_FIELDS)}")
    new = object.__new__(MegacityState)
    new.__dict__.update(state.__dict__, **changes)
    return new


class ResearchItem(BaseModel):
    name: str
    status: Literal["unknown", "clue", "decoded"]
    text: str


class Component(BaseModel):
    name: str
    kind: str
    available: bool
    #: power; a conduit's is per cell without a conduit yet, the others' per action
    cost: int
    descriptor: str


class MegacityObservation(VariantObservation):
    """Exactly what the agent sees."""

    step: int
    steps_left: int
    districts: int
    district_cells: list[str]
    #: each district's airflow strength, e.g. {"B3": 4}
    district_airflow: dict[str, int]
    #: districts that could not run after the last step, e.g. "B3 (air circulation too weak)"
    offline: list[str]
    #: why victory is forfeited, or None while every threshold has held
    breach: str | None
    integrity: int
    air: int
    #: where the air index is heading at the airflow shown
    air_target: int
    power: int
    #: change of storage over the last step, the action's cost included
    power_net: int
    #: power generated and drawn by the districts per step, as built now
    power_generation: int
    power_draw: int
    brownout: bool
    #: SIZE rows, row 5 (north) first; each row runs A to E
    stress: list[list[int]]
    #: per cell: "." solid rock, "|" a column in undug rock, "o" chamber, "S" supported
    #: chamber, "D" running district, "X" offline district; a "+" suffix marks a conduit
    sites: list[list[str]]
    supports: dict[str, str]
    conduits: list[str]
    vents: list[str]
    #: per cell "E2N1" (east 2, north 1), "." calm; strength = sum of the components
    airflow: list[list[str]]
    airflow_strength: list[list[int]]
    components: list[Component]
    research_points: int
    research: list[ResearchItem]
    #: after a scan: seams ("row 3 pulling east") and fault cells
    seams: list[str] | None
    faults: list[str] | None
    report: list[str]
    status: Literal["playing", "victory", "collapse", "suffocation", "out_of_steps"]
    #: only in the withheld-knowledge variant (reset option `withheld`; absent otherwise)
    withheld: bool | None = None
    variant_fields: ClassVar[tuple[str, ...]] = ("withheld",)


class MegacityAction(ActionSchema):
    """One Megacity action (function calling)."""

    action: Literal[
        "excavate", "support", "vent", "conduit", "district", "research", "scan", "wait"
    ]
    #: the target cell(s) like "B3"; a conduit takes 1-3 contiguous cells. A cell is one
    #: letter and a number, nothing else ("B3\nAction: district B3" is not a cell).
    cells: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z][0-9]{1,2}$")]] = Field(
        default_factory=list
    )
    material: Literal["timber", "basalt", "mycelium", "lodestone"] | None = None
    direction: Literal["north", "south", "east", "west"] | None = None

    @model_validator(mode="after")
    def _takes_what_it_can_do(self) -> MegacityAction:
        # Nothing given is dropped: an argument the action does not take is an error.
        low, high = {"excavate": (1, 1), "support": (1, 1), "vent": (1, 1), "district": (1, 1),
                     "conduit": (1, 3)}.get(self.action, (0, 0))  # fmt: skip
        if not low <= len(self.cells) <= high:
            raise ValueError(f"{self.action} takes {low}-{high} cells, not {len(self.cells)}")
        if (self.material is not None) != (self.action == "support"):
            raise ValueError("a material is required for support and taken by nothing else")
        if (self.direction is not None) != (self.action == "vent"):
            raise ValueError("a direction is required for vent and taken by nothing else")
        return self

    @classmethod
    def decoding_schema(cls) -> dict[str, Any]:
        """One variant per kind of action, each with exactly the fields it takes: a
        constrained decoder can then only write an action the validator accepts, on a
        cell of the grid (the flat schema let a small model write `vent` without a
        direction, every turn)."""
        # a cell on the grid only: a decoder free to write "A21" wastes the turn
        cell = {"type": "string", "pattern": f"^[{COLS[0]}-{COLS[-1]}][1-{SIZE}]$"}
        declared = cls.model_json_schema()["properties"]

        def variant(kinds: list[str], cells: int, *extra: str) -> dict[str, Any]:
            properties: dict[str, Any] = {"action": {"type": "string", "enum": kinds}}
            if cells:
                properties["cells"] = {"type": "array", "items": cell, "minItems": 1,
                                       "maxItems": cells}  # fmt: skip
            for name in extra:
                properties[name] = {"type": "string", "enum": _choices(declared[name])}
            return {"type": "object", "properties": properties,
                    "required": list(properties), "additionalProperties": False}  # fmt: skip

        return {"anyOf": [
            variant(["excavate", "district"], 1),
            variant(["support"], 1, "material"),
            variant(["vent"], 1, "direction"),
            variant(["conduit"], 3),
            variant(["research", "scan", "wait"], 0),
        ]}  # fmt: skip

    def to_command(self) -> str:
        parts = [self.action, *self.cells]
        if self.material:
            parts.append(self.material)
        if self.direction:
            parts.append(self.direction)
        return " ".join(parts)


def _choices(field: dict[str, Any]) -> list[str]:
    """The allowed strings of an optional `Literal[...] | None` field's JSON schema."""
    return next(option["enum"] for option in field["anyOf"] if "enum" in option)
