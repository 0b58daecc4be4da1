"""EM Anomaly's scores: success rate, where the Mark landed, and an informed searcher's
success as the ceiling (an estimate)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, ClassVar

from textenvs.core import scoring
from textenvs.scenarios.em_anomaly import rules
from textenvs.scenarios.em_anomaly.env import EMAnomalyEnv
from textenvs.scenarios.em_anomaly.state import MARK_RADIUS, STEP_BUDGET, Cell

MARK_KINDS = ("on_target", "near", "far")
Step = tuple[int, Cell]  # (walking distance, first tile of the walk)


class EMAnomalyScoring(scoring.Scoring):
    labels: ClassVar[scoring.Labels] = {
        "marks_on_target": ("marks on target", "count"),
        "marks_near": ("marks 2 steps away", "count"),
        "marks_far": ("marks further away", "count"),
        "no_mark": ("episodes without a mark", "count"),
    }

    def measure(self, seed: int | None, episode: scoring.Episode) -> scoring.Skills:
        """How the Mark landed, read from the reading on the marked tile: 2 or 3 is within
        one step of the node (a win), 1 is exactly two steps away, 0 is further (or behind
        a wall)."""
        final = episode.get("final_info_observation") or {}
        if final.get("last_action") != "mark":
            return {"mark": None}
        view = final.get("view") or [[None] * 3] * 3
        reading = view[1][1]
        if not isinstance(reading, int):
            return {"mark": None}
        return {"mark": "on_target" if reading >= 2 else "near" if reading == 1 else "far"}

    def aggregate(self, records: Sequence[scoring.Record]) -> dict[str, Any]:
        marks = [(r.get("skills") or {}).get("mark", "?") for r in records]
        known = [m for m in marks if m != "?"]
        counts = {kind: known.count(kind) for kind in MARK_KINDS}
        return {f"marks_{k}": v if known else None for k, v in counts.items()} | {
            "no_mark": known.count(None) if known else None
        }

    def ceiling(self, seeds: Sequence[int], scripted: float) -> scoring.Ceiling:
        wins = sum(em_informed_search(s) for s in seeds)
        return (
            wins / len(seeds),
            "estimate",
            "a searcher that knows the walls and its own position and learns the node the "
            "moment its 3x3 view shows a non-zero reading (more than an agent can see); it "
            "walks to the tile whose view would rule out the most node positions per step "
            "(+2) and, with the budget nearly spent, marks next to the most candidates",
        )


def em_informed_search(seed: int) -> bool:
    """One episode of the informed searcher (see `EMAnomalyScoring.ceiling`); True if it
    wins."""
    state = EMAnomalyEnv().world_for(seed)
    walls, node = state.walls, state.node
    free = [c for c in rules.ALL_CELLS if c not in walls]
    # detects[t]: the node positions that light some tile of the 3x3 view from t.
    detects: dict[Cell, set[Cell]] = {t: set() for t in free}
    for c in free:
        field = rules.compute_field(walls, c)
        lit = [(x, y) for y, row in enumerate(field) for x, v in enumerate(row) if v > 0]
        for lx, ly in lit:
            for dx in (-1, 0, 1):
                for dy in (-1, 0, 1):
                    t = (lx + dx, ly + dy)
                    if t in detects:
                        detects[t].add(c)
    candidates = set(free)
    pos, left = state.position, STEP_BUDGET
    while left > 0:
        if node in detects[pos]:  # the node is known: walk next to it and mark
            walk = rules.distances(pos, walls)
            need = min(d for t, d in walk.items() if rules.manhattan(t, node) <= MARK_RADIUS)
            return need + 1 <= left
        candidates -= detects[pos]
        paths = _first_moves(pos, walls)
        cover = {
            t: sum(1 for c in candidates if rules.manhattan(t, c) <= MARK_RADIUS)
            for t, (d, _) in paths.items()
            if d <= left - 1
        }
        tile = max(cover, key=lambda t: (cover[t], -paths[t][0], t))
        if paths[tile][0] + 2 > left:  # time only for the walk and the Mark
            target = tile
        else:
            scores = {
                t: len(detects[t] & candidates) / (d + 2)
                for t, (d, _) in paths.items()
                if 0 < d <= left - 1
            }
            target = max(scores, key=lambda t: (scores[t], t)) if scores else tile
        if target == pos:
            return rules.manhattan(pos, node) <= MARK_RADIUS
        pos = paths[target][1]
        left -= 1
    return False


def _first_moves(start: Cell, walls: frozenset[Cell]) -> dict[Cell, Step]:
    """Walking distance to every free tile and the first tile on a shortest walk there."""
    out: dict[Cell, Step] = {start: (0, start)}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        d, first = out[cell]
        for nxt in rules.NEIGHBOURS[cell]:
            if nxt not in walls and nxt not in out:
                out[nxt] = (d + 1, first if d else nxt)
                queue.append(nxt)
    return out
