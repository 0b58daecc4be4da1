"""The best known score per scenario, and how it is known.

Each function takes the band's seeds and returns `(value, kind, method)`: `kind` is
`exact` (proven), `bound` (no agent can do better; it may not be reachable) or
`estimate` (measured with a stronger-than-possible player, so read as approximate).
Hidden state is read here on purpose: a ceiling is a fact about the seeds, never an
agent's input.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import textenvs
from textenvs.evals.skills import TREASURE_OPTIMUM, TREASURE_STEPS, squad_recon_ceiling

Ceiling = tuple[float, str, str]
Cell = tuple[int, int]
Step = tuple[int, Cell]  # (walking distance, first tile of the walk)


def treasure_hunt(seeds: Sequence[int]) -> Ceiling:
    return (
        TREASURE_OPTIMUM,
        "exact",
        f"stepping onto a new tile every one of the {TREASURE_STEPS} steps; nothing is "
        "known about a tile before stepping on it, so no order of tiles does better "
        "(exact probability that the Bomb comes before every Flower)",
    )


def squad_recon(seeds: Sequence[int]) -> Ceiling:
    winnable = sum(squad_recon_ceiling(s) == 1.0 for s in seeds)
    return (
        winnable / len(seeds),
        "bound",
        "share of seeds whose three squads together outfight the stronger camp (both camps "
        "can fall only then); walking time is not counted",
    )


def reached_by_scripted(name: str, scripted: float) -> Ceiling:
    """Scenarios whose observation proves a perfect score is reachable on every seed."""
    if scripted >= 1.0:
        return (1.0, "exact", "the scripted agent reaches 1.0 on every band seed")
    return (1.0, "bound", f"the most the headline metric allows (scripted reaches {scripted:.3f})")


def em_anomaly(seeds: Sequence[int]) -> Ceiling:
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
    """One episode of the informed searcher (see `em_anomaly`); True if it wins."""
    from textenvs.scenarios.em_anomaly import rules
    from textenvs.scenarios.em_anomaly.state import MARK_RADIUS, STEP_BUDGET

    env = textenvs.make("em-anomaly")
    env.reset(seed=seed)
    state = env._state
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
    from textenvs.scenarios.em_anomaly import rules

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
