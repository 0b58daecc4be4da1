"""Megacity planner: an engineer who knows the physics but reads only the observation.

1. `scan` to chart the seams and faults.
2. Plan six district sites off the seams and faults (no sideways pull, stress stable),
   preferring non-adjacent cells with low stress and ventilation shafts laid across the
   prevailing current (perpendicular shafts keep their strength through reversals).
3. Tap a seam with a 3-cell conduit for power, dig the planned shafts, then for each site:
   a basalt column, excavate, build the district core.
4. Spend the remaining steps on research (each decoded rule pays), keeping a power reserve.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from textenvs.agents.scripted import ScriptedPolicy

SIZE = 5
COLS = "ABCDE"
DISTRICTS = 6
STRESS_LIMIT = 72  # basalt holds 75 of still load; keep a margin
NEIGHBOUR_LOAD = 6
GOOD_FLOW = 4  # worst-case strength a site should keep through reversals
VENT_MAG = 2
RESERVE = 8  # power kept back when researching
COSTS = {"support": 3, "excavate": 4, "district": 6, "vent": 5, "research": 3}

Cell = tuple[int, int]


def name(cell: Cell) -> str:
    return f"{COLS[cell[0]]}{cell[1] + 1}"


def parse_cell(text: str) -> Cell:
    return COLS.index(text[0].upper()), int(text[1:]) - 1


def parse_flow(text: str) -> tuple[int, int]:
    dx = dy = 0
    for letter, amount in re.findall(r"([NSEW])(\d+)", text):
        value = int(amount)
        dx += {"E": value, "W": -value}.get(letter, 0)
        dy += {"N": value, "S": -value}.get(letter, 0)
    return dx, dy


class MegacityPolicy(ScriptedPolicy):
    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self.sites: list[Cell] = []
        self.vents: list[str] = []
        self.tap: list[Cell] = []

    # ----- reading the observation ------------------------------------------------------

    @staticmethod
    def _grid(obs: dict[str, Any], key: str) -> dict[Cell, Any]:
        rows = obs[key]  # north first
        return {(c, SIZE - 1 - i): rows[i][c] for i in range(SIZE) for c in range(SIZE)}

    def _plan(self, obs: dict[str, Any]) -> None:
        stress = self._grid(obs, "stress")
        flow = {c: parse_flow(v) for c, v in self._grid(obs, "airflow").items()}
        seam_cells: set[Cell] = set()
        seams = []
        for text in obs["seams"]:
            what, index, _, direction = text.split()
            if what == "row":
                cells = [(c, int(index) - 1) for c in range(SIZE)]
            else:
                cells = [(COLS.index(index), r) for r in range(SIZE)]
            if direction in ("west", "south"):
                cells.reverse()
            seams.append(cells)
            seam_cells.update(cells)
        faults = {parse_cell(f) for f in obs["faults"]}
        # Current field = base (either sign) + nothing yet: no shafts before the plan.
        vertical = sum(abs(dy) for _, dy in flow.values()) >= sum(
            abs(dx) for dx, _ in flow.values()
        )
        candidates = [
            c for c in flow if c not in seam_cells and c not in faults and stress[c] <= STRESS_LIMIT
        ]
        best: tuple[float, tuple[Cell, ...], list[str]] | None = None
        for combo in itertools.combinations(candidates, DISTRICTS):
            score, vents = self._score(combo, stress, flow, vertical)
            if best is None or score > best[0]:
                best = (score, combo, vents)
        if best is None:  # too few safe cells: take the least stressed off-seam cells
            spare = sorted((c for c in flow if c not in seam_cells), key=lambda c: stress[c])
            self.sites, self.vents = spare[:DISTRICTS], []
        else:
            self.sites, self.vents = list(best[1]), best[2]
        # The tap: the 3 seam cells with most sites next to them (they then draw less).
        near = {n for s in self.sites for n in _around(s)}
        options = [cells[i : i + 3] for cells in seams for i in range(SIZE - 2)]
        self.tap = max(options, key=lambda seg: sum(c in near for c in seg))

    @staticmethod
    def _score(
        combo: tuple[Cell, ...],
        stress: dict[Cell, int],
        flow: dict[Cell, tuple[int, int]],
        vertical: bool,
    ) -> tuple[float, list[str]]:
        chosen = set(combo)
        score = 0.0
        for cell in combo:
            crowd = sum(n in chosen for n in _around(cell))
            if stress[cell] + NEIGHBOUR_LOAD * crowd > STRESS_LIMIT:
                return -1e9, []
            score -= stress[cell] / 100 + 2 * crowd
        vents: list[str] = []
        lines: dict[int, list[Cell]] = {}
        for cell in combo:
            lines.setdefault(cell[1] if vertical else cell[0], []).append(cell)
        for line, cells in sorted(lines.items()):
            need = 0
            for cell in cells:
                dx, dy = flow[cell]
                main, cross = (abs(dy), abs(dx)) if vertical else (abs(dx), abs(dy))
                # Worst case over both phases: the shaft fights the cross current.
                for k in range(3):
                    if main + max(VENT_MAG * k - cross, cross - VENT_MAG * k) >= GOOD_FLOW:
                        need = max(need, k)
                        break
                else:
                    need = 2
                    score -= 3
            for k in range(need):
                start = (k, line) if vertical else (line, k)
                vents.append(f"vent {name(start)} {'east' if vertical else 'north'}")
        score -= 1.5 * len(vents)
        return score, vents

    # ----- acting -----------------------------------------------------------------------

    def choose(self, observation: dict[str, Any]) -> str:
        obs = observation
        if obs["seams"] is None:
            return "scan"
        if not self.sites:
            self._plan(obs)
        power = obs["power"]
        conduits = {parse_cell(c) for c in obs["conduits"]}
        if not set(self.tap) <= conduits:
            return "conduit " + " ".join(name(c) for c in self.tap)
        have = {f"vent {v}".lower() for v in obs["vents"]}
        for vent in self.vents:
            if vent.lower() not in have:
                return vent if power >= COSTS["vent"] else "wait"
        sites = self._grid(obs, "sites")
        strength = self._grid(obs, "airflow_strength")
        supports = obs["supports"]
        for cell in self.sites:
            mark = sites[cell].rstrip("+")
            if mark == "D":
                continue
            if name(cell) not in supports:
                return f"support {name(cell)} basalt" if power >= COSTS["support"] else "wait"
            if mark == ".":
                return f"excavate {name(cell)}" if power >= COSTS["excavate"] else "wait"
            if strength[cell] >= 3 and power >= COSTS["district"]:
                return f"district {name(cell)}"
        if obs["research_points"] < 10 and power >= COSTS["research"] + RESERVE:
            return "research"
        return "wait"


def _around(cell: Cell) -> list[Cell]:
    c, r = cell
    near = [(c + 1, r), (c - 1, r), (c, r + 1), (c, r - 1)]
    return [(x, y) for x, y in near if 0 <= x < SIZE and 0 <= y < SIZE]
