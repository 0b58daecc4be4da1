"""Megacity reference policies that do not learn from the world, for the published
baselines (`python -m benchmarks.megacity_baselines`). Each reads only the observation.

- `NaiveBuilder`: builds as on the surface. It scans, avoids seam and fault cells, picks
  six spread-out low-stress cells, taps a seam with one conduit, vents along the current
  where a site is weak, uses basalt everywhere and opens every district in steps 32-39.
  It never researches.
- `FixedSequence`: the same 40 commands on every seed (a plausible plan written blind).
- `SupportSwapFarmer`: one chamber, then `support X timber` / `support X basalt` in turn
  (it farmed the old +2 per point of integrity recovered).
- `DigSupportFarmer`: excavate a cell, then support it, cell after cell, never replacing
  a column and never opening a district.
- `Recipe`: the fixed recipe that won most v1 seeds without rehearsing any physics: six
  low-stress cells off the seams and faults, a conduit on each (conduit damping), one
  seam tap, research to mycelium (basalt on cells clear of pull, mycelium beside a
  seam), a shaft across the current on every site's line, districts in the last six
  steps. `RecipeWithoutDamping` is the same without the conduits on the sites.
- `Waiter`: `wait` forty times.
"""

from __future__ import annotations

from typing import Any

from textenvs.agents.scripted import ScriptedPolicy
from textenvs.agents.scripted.megacity import north_first, parse_cell, parse_flow, parse_seams
from textenvs.scenarios.megacity.state import COLS, SIZE, STEP_BUDGET, Cell, cell_name, neighbours

NAIVE_OPEN_FROM = 32
NAIVE_FLOW = 4  # a site weaker than this gets a shaft along the current


class ListBuilder(ScriptedPolicy):
    """Scan, work through the command list `plan` writes from the scanned map, then open
    a district on each site from step OPEN_FROM."""

    OPEN_FROM = STEP_BUDGET

    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self.sites: list[Cell] = []
        self.todo: list[str] = []

    def plan(self, obs: dict[str, Any]) -> None:
        raise NotImplementedError

    def choose(self, observation: dict[str, Any]) -> str:
        obs = observation
        if obs["seams"] is None:
            return "scan"
        if not self.sites:
            self.plan(obs)
        if self.todo:
            return self.todo.pop(0)
        if obs["step"] >= self.OPEN_FROM:
            for cell in self.sites:
                if cell_name(cell) not in obs["district_cells"]:
                    return f"district {cell_name(cell)}"
        return "wait"


class NaiveBuilder(ListBuilder):
    OPEN_FROM = NAIVE_OPEN_FROM

    def plan(self, obs: dict[str, Any]) -> None:
        stress = north_first(obs["stress"])
        seams = parse_seams(obs["seams"])
        seam_cells = {c for seam in seams for c in seam.cells}
        faults = {parse_cell(f) for f in obs["faults"]}
        open_cells = sorted(
            (c for c in stress if c not in seam_cells and c not in faults),
            key=lambda c: (stress[c], c[1], c[0]),
        )
        # Spread out: lowest stress first, skipping neighbours of chosen sites, then fill.
        for cell in open_cells:
            if len(self.sites) < 6 and not set(neighbours(cell)) & set(self.sites):
                self.sites.append(cell)
        for cell in open_cells:
            if len(self.sites) < 6 and cell not in self.sites:
                self.sites.append(cell)
        tap = seams[0].cells[1:4]
        self.todo.append("conduit " + " ".join(cell_name(c) for c in tap))
        flow = {c: parse_flow(v) for c, v in north_first(obs["airflow"]).items()}
        along = _prevailing(flow)
        lines = set()
        for cell in self.sites:
            dx, dy = flow[cell]
            if abs(dx) + abs(dy) < NAIVE_FLOW:
                # A shaft along the current, from the upwind edge of the site's line.
                if along in ("north", "south"):
                    start = (cell[0], 0 if along == "north" else SIZE - 1)
                else:
                    start = (0 if along == "east" else SIZE - 1, cell[1])
                lines.add((start, along))
        self.todo += [f"vent {cell_name(s)} {d}" for s, d in sorted(lines)]
        for cell in self.sites:
            self.todo += [f"support {cell_name(cell)} basalt", f"excavate {cell_name(cell)}"]


def _prevailing(flow: dict[Cell, tuple[int, int]]) -> str:
    sx = sum(dx for dx, _ in flow.values())
    sy = sum(dy for _, dy in flow.values())
    if abs(sy) >= abs(sx):
        return "north" if sy >= 0 else "south"
    return "east" if sx >= 0 else "west"


FIXED_BUILD = [
    "scan", "research", "research", "conduit C1 C2 C3", "vent A2 east", "vent A4 east",
    "support B2 basalt", "excavate B2", "support D2 basalt", "excavate D2",
    "support B4 mycelium", "excavate B4", "support D4 mycelium", "excavate D4",
    "support A1 basalt", "excavate A1", "support E5 basalt", "excavate E5",
]  # fmt: skip
FIXED_DISTRICTS = ["district B2", "district D2", "district B4", "district D4",
                   "district A1", "district E5"]  # fmt: skip


def _fixed_plan() -> list[str]:
    """The build, waits until step 24, the six districts, then waits to step 40."""
    commands = FIXED_BUILD + ["wait"] * (24 - len(FIXED_BUILD)) + FIXED_DISTRICTS
    return commands + ["wait"] * (40 - len(commands))


class FixedSequence(ScriptedPolicy):
    COMMANDS = _fixed_plan()

    def choose(self, observation: dict[str, Any]) -> str:
        return self.COMMANDS[min(observation["step"], len(self.COMMANDS) - 1)]


class SupportSwapFarmer(ScriptedPolicy):
    CELL = "C3"

    def choose(self, observation: dict[str, Any]) -> str:
        sites = north_first(observation["sites"])
        if sites[parse_cell(self.CELL)].rstrip("+") == ".":
            return f"excavate {self.CELL}"
        current = observation["supports"].get(self.CELL)
        return f"support {self.CELL} {'basalt' if current == 'timber' else 'timber'}"


class DigSupportFarmer(ScriptedPolicy):
    def choose(self, observation: dict[str, Any]) -> str:
        sites = north_first(observation["sites"])
        supports = observation["supports"]
        for r in range(SIZE):
            for c in range(SIZE):
                cell = (c, r)
                if sites[cell].rstrip("+") != "." and cell_name(cell) not in supports:
                    return f"support {cell_name(cell)} basalt"
        for r in range(SIZE):
            for c in range(SIZE):
                if sites[(c, r)].rstrip("+") == ".":
                    return f"excavate {cell_name((c, r))}"
        return "wait"


RECIPE_OPEN_FROM = 34  # the six districts open in the last six steps


class Recipe(ListBuilder):
    OPEN_FROM = RECIPE_OPEN_FROM
    DAMPING = True

    def plan(self, obs: dict[str, Any]) -> None:
        stress = north_first(obs["stress"])
        seams = parse_seams(obs["seams"])
        seam_cells = {c for seam in seams for c in seam.cells}
        faults = {parse_cell(f) for f in obs["faults"]}
        off = [c for c in stress if c not in seam_cells and c not in faults]
        self.sites = sorted(off, key=lambda c: (stress[c], c[1], c[0]))[:6]
        near = {n for s in self.sites for n in (*neighbours(s), s)}
        taps = [seam.cells[i : i + 3] for seam in seams for i in range(SIZE - 2)]
        tap = max(taps, key=lambda path: sum(c in near for c in path))
        self.todo = ["research", "research", "conduit " + " ".join(cell_name(c) for c in tap)]
        if self.DAMPING:
            self.todo += [f"conduit {cell_name(c)}" for c in self.sites]
        flow = {c: parse_flow(v) for c, v in north_first(obs["airflow"]).items()}
        vertical = _prevailing(flow) in ("north", "south")
        # Across the current: a shaft east along each site's row (or north up its column).
        lines = sorted({c[1] if vertical else c[0] for c in self.sites})
        for line in lines:
            self.todo.append(f"vent A{line + 1} east" if vertical else f"vent {COLS[line]}1 north")
        for cell in self.sites:
            pulled = any(n in seam_cells for n in neighbours(cell))
            material = "mycelium" if pulled else "basalt"
            self.todo += [f"support {cell_name(cell)} {material}", f"excavate {cell_name(cell)}"]


class RecipeWithoutDamping(Recipe):
    DAMPING = False


class Waiter(ScriptedPolicy):
    def choose(self, observation: dict[str, Any]) -> str:
        return "wait"


BASELINES: dict[str, type[ScriptedPolicy]] = {
    "recipe": Recipe,
    "recipe-no-damping": RecipeWithoutDamping,
    "naive": NaiveBuilder,
    "fixed": FixedSequence,
    "wait": Waiter,
    "farm-swap": SupportSwapFarmer,
    "farm-dig": DigSupportFarmer,
}
