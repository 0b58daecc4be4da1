"""Squad Recon heuristic: explore apart, concentrate force, attack only when it must win.

Each turn, from the observation alone:
1. Among the standing camps seen so far, pick the (camp, group of squads) whose combined
   strength exceeds the camp's and that can gather next to it soonest (fewest squads on a
   tie). That group walks to cells next to the camp over known open ground, and attacks
   once every member is there (everyone next to the camp fights, so the sum only grows).
2. Every other squad explores: it heads for the known open cell with the most unseen
   cells in its 7x7 window per step of travel; cells claimed by one squad's target count
   for nothing for the next, so the squads fan out.
A camp whose strength is not below the total active strength is never attacked.
"""

from __future__ import annotations

from collections import deque
from itertools import combinations
from typing import Any, ClassVar

from textenvs.agents.scripted import ScriptedPolicy
from textenvs.episodes.protocol import EpisodeContext

SIZE = 15
RADIUS = 3
# Exploration score = unseen cells in reach / (travel + OFFSET): with a larger offset a
# squad prefers a rich area a few steps away over a poor one next door (tuned: 1, 3, 6).
OFFSET = 3
STEPS = {"north": (0, 1), "east": (1, 0), "south": (0, -1), "west": (-1, 0)}
PASSABLE = set(".xABC*")
# Per coordinate, the window's [start, end) along that axis clipped to the map.
SPANS = [(max(0, v - RADIUS), min(SIZE, v + RADIUS + 1)) for v in range(SIZE)]

Cell = tuple[int, int]


class SquadReconPolicy(ScriptedPolicy):
    #: whether it remembers the cells its squads stood on, its one memory beyond the
    #: observation (the reactive agent's copy keeps only where they stand now)
    remembers_visits: ClassVar[bool] = True

    def __init__(self, context: EpisodeContext) -> None:
        super().__init__(context)
        self.visited: set[Cell] = set()

    def choose(self, observation: dict[str, Any]) -> str:
        rows = observation["map"]
        self.cells = {
            (x, SIZE - 1 - r): ch for r, row in enumerate(rows) for x, ch in enumerate(row)
        }
        # Derived once per turn: the BFS and the exploration scores query them a lot.
        self.passable = {cell for cell, ch in self.cells.items() if ch in PASSABLE}
        self.unseen = {cell for cell, ch in self.cells.items() if ch == "?"}
        squads = {
            s["name"]: ((s["x"], s["y"]), s["strength"])
            for s in observation["squads"]
            if s["status"] == "active"
        }
        # A sensor has already swept from every cell a squad stood on: no target there.
        if not self.remembers_visits:
            self.visited.clear()
        self.visited.update(cell for cell, _strength in squads.values())
        orders: dict[str, str] = {}
        camps = [c for c in observation["camps"] if c["status"] == "standing"]
        plan = self._attack_plan(squads, camps)
        if plan is not None:
            _camp, group, fields = plan
            ready = all(fields[squads[n][0]] == 0 for n in group)
            for name in group:
                orders[name] = "attack" if ready else self._downhill(squads[name][0], fields)
        claimed: set[Cell] = set()
        for name in sorted(squads):
            if name not in orders:
                orders[name] = self._explore(squads[name][0], claimed)
        return "; ".join(f"{name} {orders[name]}" for name in sorted(orders)) or "all hold"

    # ----- map helpers ----------------------------------------------------------------

    def _open(self, cell: Cell) -> bool:
        return cell in self.passable

    def _distances(self, sources: list[Cell]) -> dict[Cell, int]:
        """BFS over known open ground from `sources` (which must be open)."""
        passable = self.passable
        dist = {s: 0 for s in sources if s in passable}
        queue = deque(dist)
        steps = tuple(STEPS.values())
        while queue:
            x, y = cell = queue.popleft()
            far = dist[cell] + 1
            for dx, dy in steps:
                nxt = (x + dx, y + dy)
                if nxt not in dist and nxt in passable:
                    dist[nxt] = far
                    queue.append(nxt)
        return dist

    def _downhill(self, at: Cell, field: dict[Cell, int]) -> str:
        """The move that lowers the distance field (hold if none does)."""
        here = field.get(at)
        for command, (dx, dy) in STEPS.items():
            nxt = (at[0] + dx, at[1] + dy)
            if here is not None and field.get(nxt, here) < here:
                return command
        return "hold"

    # ----- attacking ------------------------------------------------------------------

    def _attack_plan(
        self, squads: dict[str, tuple[Cell, int]], camps: list[dict[str, Any]]
    ) -> tuple[Cell, tuple[str, ...], dict[Cell, int]] | None:
        best: tuple[tuple[int, int], Cell, tuple[str, ...], dict[Cell, int]] | None = None
        names = sorted(squads)
        for camp in camps:
            cell = (camp["x"], camp["y"])
            around = [(cell[0] + dx, cell[1] + dy) for dx, dy in STEPS.values()]
            field = self._distances(around)
            for size in range(1, len(names) + 1):
                for group in combinations(names, size):
                    if sum(squads[n][1] for n in group) <= camp["strength"]:
                        continue
                    if any(squads[n][0] not in field for n in group):
                        continue
                    key = (max(field[squads[n][0]] for n in group), size)
                    if best is None or key < best[0]:
                        best = (key, cell, group, field)
        return None if best is None else best[1:]

    # ----- exploring ------------------------------------------------------------------

    def _window(self, centre: Cell) -> list[Cell]:
        return [
            (centre[0] + dx, centre[1] + dy)
            for dx in range(-RADIUS, RADIUS + 1)
            for dy in range(-RADIUS, RADIUS + 1)
            if self.cells.get((centre[0] + dx, centre[1] + dy)) == "?"
        ]

    def _gains(self, claimed: set[Cell]) -> list[list[int]]:
        """Unseen, unclaimed cells in each cell's 7x7 window (what `_window` minus
        `claimed` counts), from a 2-D prefix sum: one table per squad, not one scan of
        49 cells per reachable cell."""
        prefix = [[0] * (SIZE + 1) for _ in range(SIZE + 1)]
        for x in range(SIZE):
            above, row = prefix[x], prefix[x + 1]
            run = 0
            for y in range(SIZE):
                run += (x, y) in self.unseen and (x, y) not in claimed
                row[y + 1] = above[y + 1] + run
        return [
            [prefix[x1][y1] - prefix[x0][y1] - prefix[x1][y0] + prefix[x0][y0] for y0, y1 in SPANS]
            for x0, x1 in SPANS
        ]

    def _explore(self, at: Cell, claimed: set[Cell]) -> str:
        dist = self._distances([at])
        gains = self._gains(claimed)
        best: tuple[float, Cell] | None = None
        for cell in sorted(dist):
            if cell in self.visited:  # unseen cells left there are hidden behind forest
                continue
            gain = gains[cell[0]][cell[1]]
            if gain == 0:
                continue
            score = gain / (dist[cell] + OFFSET)
            if best is None or score > best[0]:
                best = (score, cell)
        if best is None:
            return "hold"
        target = best[1]
        claimed.update(self._window(target))
        return self._downhill(at, self._distances([target]))
