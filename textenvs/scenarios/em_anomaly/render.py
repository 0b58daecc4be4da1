"""EM Anomaly observation -> text (the only place that writes what the agent reads).

The observation is built from the agent's 3x3 neighbourhood alone: nothing in it (or in
the text) depends on where that neighbourhood lies on the grid, so no coordinates leak.
"""

from __future__ import annotations

from textenvs.core.render import grid, legend, status
from textenvs.scenarios.em_anomaly.rules import inside
from textenvs.scenarios.em_anomaly.state import (
    STEP_BUDGET,
    VIEW,
    EMObservation,
    EMState,
    ViewCell,
)

HALF = VIEW // 2
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
ENDINGS = {
    "marked_success": "EPISODE OVER: you marked within 1 tile of the Vulnerability Node. "
    "Success (reward +1).",
    "marked_failure": "EPISODE OVER: you marked, but the Vulnerability Node is not within "
    "1 tile of you. Failure (reward 0).",
    "out_of_steps": "EPISODE OVER: no steps left. Failure (reward 0).",
}


def observe(state: EMState, steps_used: int) -> EMObservation:
    x, y = state.position
    rows: list[list[ViewCell]] = []
    for wy in range(y + HALF, y - HALF - 1, -1):
        row: list[ViewCell] = []
        for wx in range(x - HALF, x + HALF + 1):
            if not inside((wx, wy)):
                row.append("outside")
            elif (wx, wy) in state.walls:
                row.append("wall")
            else:
                row.append(state.level((wx, wy)))  # type: ignore[arg-type]
        rows.append(row)
    wasted = state.last_step != steps_used
    if state.outcome != "playing":
        ending = f"marked_{state.outcome}"
    else:
        ending = "out_of_steps" if steps_used >= STEP_BUDGET else "playing"
    return EMObservation(
        view=rows,
        facing=state.facing.value,
        steps_left=STEP_BUDGET - steps_used,
        last_action=None if wasted or state.last_action is None else state.last_action.value,
        last_result="wasted" if wasted else state.last_result,
        status=ending,  # type: ignore[arg-type]
    )


def describe_last(obs: EMObservation) -> str:
    """One line on what the last command did (a blocked move says so explicitly)."""
    action = obs.last_action
    result = obs.last_result
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
        return f"{action}: you now face {obs.facing}"
    return "mark: you declared the Vulnerability Node here"


def _cell(value: ViewCell) -> str:
    return SYMBOLS[value] if isinstance(value, str) else str(value)


def render(obs: EMObservation) -> str:
    cells = [[_cell(v) for v in row] for row in obs.view]
    cells[HALF][HALF] = f"[{cells[HALF][HALF]}]"
    view = grid(
        cells,
        col_labels=["west", "centre", "east"],
        row_labels=["north", "centre", "south"],
    )
    centre = obs.view[HALF][HALF]
    head = status(
        [
            ("Field here", centre),
            ("Facing", obs.facing),
            ("Steps left", f"{obs.steps_left} of {STEP_BUDGET}"),
            ("Last action", describe_last(obs)),
        ]
    )
    if obs.status != "playing":
        head += "\n" + ENDINGS[obs.status]
    return f"{head}\n\nField scan around you (3x3, north at the top):\n{view}\n{LEGEND}\n{SCALE}"
