"""Treasure Hunt observation -> text (the only place that writes what the agent reads)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from textenvs.core.render import grid, legend
from textenvs.scenarios.treasure_hunt.state import (
    SIZE,
    STEP_BUDGET,
    WINDOW,
    Icon,
    TreasureState,
)

SYMBOLS = {"unseen": "?", "empty": ".", "flower": "F", "bomb": "B", "outside": "#"}
LEGEND = legend(
    [
        ("@", "you"),
        ("?", "Unseen"),
        (".", "Empty"),
        ("B", "Bomb"),
        ("F", "Flower"),
        ("#", "outside the grid"),
    ]
)
HALF = WINDOW // 2
# Enum `.value` is a descriptor call; observe runs it for up to 25 cells every step.
VALUES = {icon: icon.value for icon in Icon}
STATUS_LINES = {
    "found_treasure": "EPISODE OVER: you stepped onto the Bomb, the treasure. You win.",
    "hit_trap": "EPISODE OVER: you stepped onto a Flower, a trap. You lose.",
    "out_of_steps": "EPISODE OVER: no steps left. You lose.",
}


def observe(state: TreasureState, steps_used: int) -> dict[str, Any]:
    """The agent's view as a `TreasureObservation`-shaped dict (built directly: this runs
    every step, and the pydantic model documents and validates it in the tests)."""
    x, y = state.position
    revealed, icons = state.revealed, state.icons
    rows = []
    for wy in range(y + HALF, y - HALF - 1, -1):
        if not 0 <= wy < SIZE:
            rows.append(["outside"] * WINDOW)
            continue
        rows.append(
            [
                "outside"
                if not 0 <= wx < SIZE
                else VALUES[icons[wy][wx]]
                if (wx, wy) in revealed
                else "unseen"
                for wx in range(x - HALF, x + HALF + 1)
            ]
        )
    standing_on = icons[y][x]
    if standing_on is Icon.BOMB:
        status = "found_treasure"
    elif standing_on is Icon.FLOWER:
        status = "hit_trap"
    else:
        status = "out_of_steps" if steps_used >= STEP_BUDGET else "playing"
    return {
        "x": x,
        "y": y,
        "steps_left": STEP_BUDGET - steps_used,
        "window": rows,
        "standing_on": VALUES[standing_on],
        "status": status,
    }


def render(obs: dict[str, Any]) -> str:
    x, y = obs["x"], obs["y"]
    head = (
        f"Position:    x={x}, y={y} (grid x 0-{SIZE - 1} west to east, "
        f"y 0-{SIZE - 1} south to north)\n"
        f"Standing on: {obs['standing_on'].capitalize()}\n"
        f"Steps left:  {obs['steps_left']} of {STEP_BUDGET}"
    )
    if obs["status"] != "playing":
        head += "\n" + STATUS_LINES[obs["status"]]
    view = _view(x, y, tuple(map(tuple, obs["window"])))
    return f"{head}\n\n5x5 view, north at the top:\n{view}\n{LEGEND}"


@lru_cache(maxsize=4096)
def _view(x: int, y: int, window: tuple[tuple[str, ...], ...]) -> str:
    """The labelled 5x5 grid; a pure function of its (hashable) arguments, so memoised:
    agents revisit the same places, and waits and bumps show the same view again."""
    cells = [[SYMBOLS[c] for c in row] for row in window]
    cells[HALF][HALF] = "@"
    return grid(
        cells,
        col_labels=[str(x + dx) for dx in range(-HALF, HALF + 1)],
        row_labels=[f"y={y + dy}" for dy in range(HALF, -HALF - 1, -1)],
        corner="x=",
    )


def narrate(events: tuple[dict[str, Any], ...]) -> str:
    """What the last command did, when the view alone would not make it plain."""
    for event in events:
        x, y = event.get("at", (0, 0))
        if event["type"] == "bump":
            return (
                f"Last command: {event['direction']} - blocked by the edge of the grid; "
                f"you stay at x={x}, y={y}."
            )
        if event["type"] == "reveal" and "direction" not in event and event.get("own"):
            return f"Last command: reveal - your tile (x={x}, y={y}) is {event['icon']}."
        if event["type"] == "wait":
            return "Last command: wait - you stay where you are."
    return ""
