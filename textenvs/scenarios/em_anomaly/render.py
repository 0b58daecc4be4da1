"""EM Anomaly observation -> text (the only place that writes what the agent reads).

The observation is built from the agent's 3x3 neighbourhood alone: nothing in it (or in
the text) depends on where that neighbourhood lies on the grid, so no coordinates leak.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from textenvs.core.render import grid, legend
from textenvs.scenarios.em_anomaly.state import (
    SIZE,
    STEP_BUDGET,
    VIEW,
    Action,
    EMObservation,
    EMState,
    Facing,
    ViewCell,
)

HALF = VIEW // 2
#: the opening of the line reporting what the last command did
LAST_ACTION = "Last action:"
SYMBOLS = {"wall": "#", "outside": "x"}
LEGEND = legend(
    [
        ("0-3", "field strength on a free tile"),
        ("#", "insulating wall"),
        ("x", "outside the lab"),
        ("[ ]", "your tile"),
    ]
)
SCALE = (
    "Field strength: 3 = on the Vulnerability Node, 2 = one tile from it, 1 = two tiles "
    "from it, 0 = farther away or shielded by a wall."
)
# The withheld-knowledge variant leaves the scale out: it is for the agent to learn.
WITHHELD_SCALE = (
    "Field strength: 0-3 (what the readings mean is not told: learn it from the ends of episodes)."
)
SCAN_TITLE = "Field scan around you (3x3, north at the top):"
# Enum `.value` is a descriptor call; observe runs these every step.
FACING_NAMES = {f: f.value for f in Facing}
ACTION_NAMES = {a: a.value for a in Action}
ENDINGS = {
    "marked_success": "EPISODE OVER: you marked within 1 tile of the Vulnerability Node. "
    "Success (reward +1).",
    "marked_failure": "EPISODE OVER: you marked, but the Vulnerability Node is not within "
    "1 tile of you. Failure (reward 0).",
    "out_of_steps": "EPISODE OVER: no steps left. Failure (reward 0).",
}


# The 3x3 window's (dx, dy) offsets, northern row first, each row west to east.
WINDOW = tuple(
    tuple((dx, dy) for dx in range(-HALF, HALF + 1)) for dy in range(HALF, -HALF - 1, -1)
)


def observe_dict(state: EMState, steps_used: int) -> dict[str, Any]:
    """The observation as the plain dict `EMObservation` describes (the env's hot path:
    no model validation or dump per step)."""
    x, y = state.position
    walls, field = state.walls, state.field
    rows: list[list[ViewCell]] = []
    for offsets in WINDOW:
        row: list[ViewCell] = []
        for dx, dy in offsets:
            wx, wy = x + dx, y + dy
            if not (0 <= wx < SIZE and 0 <= wy < SIZE):
                row.append("outside")
            elif (wx, wy) in walls:
                row.append("wall")
            else:
                row.append(field[wy][wx])  # type: ignore[arg-type]
        rows.append(row)
    wasted = state.last_step != steps_used
    if state.outcome != "playing":
        ending = f"marked_{state.outcome}"
    else:
        ending = "out_of_steps" if steps_used >= STEP_BUDGET else "playing"
    obs = {
        "view": rows,
        "facing": FACING_NAMES[state.facing],
        "steps_left": STEP_BUDGET - steps_used,
        "last_action": None
        if wasted or state.last_action is None
        else ACTION_NAMES[state.last_action],
        "last_result": "wasted" if wasted else state.last_result,
        "status": ending,
    }
    if state.withheld:  # the variant's fields; absent in default play
        obs["withheld"] = True
        if ending != "playing":
            obs["node_distance"] = abs(x - state.node[0]) + abs(y - state.node[1])
    return obs


def observe(state: EMState, steps_used: int) -> EMObservation:
    """The same observation as a validated model."""
    return EMObservation(**observe_dict(state, steps_used))


def describe_last(obs: dict[str, Any]) -> str:
    """One line on what the last command did (a blocked move says so explicitly)."""
    action = obs["last_action"]
    result = obs["last_result"]
    if result == "start":
        return "none yet (the episode has just started)"
    if result == "wasted":
        return "your last command was not understood; nothing happened, one step was spent"
    if result == "moved":
        return f"{action}: you moved one tile {action}"
    if result == "blocked_by_wall":
        return f"{action}: BLOCKED by an insulating wall; you did not move (one step spent)"
    if result == "blocked_by_edge":
        return f"{action}: BLOCKED by the edge of the lab; you did not move (one step spent)"
    if result == "rotated":
        return f"{action}: you now face {obs['facing']}"
    return "mark: you declared the Vulnerability Node here"


# The field scan's text depends only on the 3x3 window's contents, and a window holds
# one of few patterns: memoise it on the window (bounded).
@lru_cache(maxsize=1024)
def _scan(view: tuple[tuple[ViewCell, ...], ...]) -> str:
    cells = [[SYMBOLS[v] if isinstance(v, str) else str(v) for v in row] for row in view]
    cells[HALF][HALF] = f"[{cells[HALF][HALF]}]"
    return grid(
        cells,
        col_labels=["west", "centre", "east"],
        row_labels=["north", "centre", "south"],
    )


def render(obs: EMObservation | dict[str, Any]) -> str:
    if isinstance(obs, EMObservation):
        obs = obs.model_dump()
    view = obs["view"]
    scan = _scan(tuple(map(tuple, view)))
    head = (
        f"Field here:  {view[HALF][HALF]}\n"
        f"Facing:      {obs['facing']}\n"
        f"Steps left:  {obs['steps_left']} of {STEP_BUDGET}\n"
        f"{LAST_ACTION} {describe_last(obs)}"
    )
    if obs["status"] != "playing":
        head += "\n" + ENDINGS[obs["status"]]
    scale = SCALE
    if obs.get("withheld"):
        scale = WITHHELD_SCALE
        if obs.get("node_distance") is not None:
            head += (
                f"\nThe Vulnerability Node was {obs['node_distance']} steps (Manhattan "
                "distance) from the tile you ended on."
            )
    return f"{head}\n\n{SCAN_TITLE}\n{scan}\n{LEGEND}\n{scale}"
