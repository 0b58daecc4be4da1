"""Squad Recon observation -> text (the only place that writes what the agent reads)."""

from __future__ import annotations

from typing import Any

from textenvs.core.render import legend
from textenvs.scenarios.squad_recon.state import (
    CAMPS,
    SIZE,
    STEP_BUDGET,
    SYMBOLS,
    ReconState,
    StepEvent,
    Terrain,
)

LEGEND = legend(
    [
        ("A/B/C", "your squads"),
        ("*", "several squads on one cell"),
        ("E", "enemy camp"),
        ("x", "eliminated camp"),
        (".", "open ground"),
        ("#", "wall"),
        ("T", "forest"),
        ("?", "unseen"),
    ]
)
STATUS_LINES = {
    "won": "EPISODE OVER: both enemy camps are eliminated. Mission complete.",
    "all_destroyed": "EPISODE OVER: all your squads are destroyed. Mission failed.",
    "out_of_steps": "EPISODE OVER: no steps left. Mission failed.",
}
BLOCKED = {
    "edge": "the edge of the map",
    "wall": "a wall",
    "forest": "forest",
    "camp": "an enemy camp",
}


def _xy(cell: tuple[int, int] | None) -> str:
    assert cell is not None
    return f"({cell[0]},{cell[1]})"


def describe(event: StepEvent) -> str:
    """One sentence per event, for the 'Last step' report."""
    who = "+".join(event.squads)
    kind = event.kind
    if kind == "move":
        return f"{who} moved {event.direction} to {_xy(event.cell)}."
    if kind == "blocked":
        where = _xy(event.cell)
        return (
            f"{who} could not move {event.direction} ({BLOCKED[event.reason]}); stays at {where}."
        )
    if kind == "hold":
        return f"{who} held at {_xy(event.cell)}."
    if kind == "order_ignored":
        return f"Order for {who} ignored: squad {who} is destroyed."
    if kind == "camp_sighted":
        return f"Enemy camp sighted at {_xy(event.cell)}, strength {event.camp_strength}."
    if kind == "attack_no_target":
        return f"{who} attack order wasted: no enemy camp next to {_xy(event.cell)}; {who} held."
    if kind == "camp_eliminated":
        return (
            f"Attack on the camp at {_xy(event.cell)} by {who}: strength {event.strength} > "
            f"{event.camp_strength}. Camp eliminated (+0.5)."
        )
    if kind == "attack_failed":
        return (
            f"Attack on the camp at {_xy(event.cell)} by {who}: strength {event.strength} is not "
            f"more than {event.camp_strength}. Attack failed; {who} destroyed."
        )
    if kind == "mission_complete":
        return "Both enemy camps eliminated."
    if kind == "all_squads_destroyed":
        return "All squads destroyed."
    raise ValueError(f"unknown event {kind!r}")


# Symbol per terrain type, looked up by member (Enum `.value` is a descriptor call, and
# observe runs it for every map cell every step).
TERRAIN_SYMBOLS = {t: SYMBOLS[t.value] for t in Terrain}

# The fogged terrain rows change only when `seen` grows, and `sweep` keeps the very same
# `seen` object when nothing new came into view: remember the rows for the last (terrain,
# seen) pair by identity (the memo holds both references, so identities stay valid).
_fog_memo: tuple[object, frozenset[tuple[int, int]], tuple[str, ...]] = (None, frozenset(), ())


def _fog_row(state: ReconState, y: int) -> str:
    seen, unseen = state.seen, SYMBOLS["unseen"]
    return "".join(
        TERRAIN_SYMBOLS[t] if (x, y) in seen else unseen for x, t in enumerate(state.terrain[y])
    )


def _fog_rows(state: ReconState) -> tuple[str, ...]:
    global _fog_memo
    terrain, seen, rows = _fog_memo
    if terrain is state.terrain and seen is state.seen:
        return rows
    fresh = state.seen - seen if terrain is state.terrain else None
    if fresh is not None and len(seen) + len(fresh) == len(state.seen):
        # The old `seen` is a subset (the usual next step): only the rows holding newly
        # seen cells differ, a row being a function of its terrain and its seen cells.
        changed = list(rows)
        for y in {y for _x, y in fresh}:
            changed[SIZE - 1 - y] = _fog_row(state, y)
        rows = tuple(changed)
    else:
        rows = tuple(_fog_row(state, y) for y in range(SIZE - 1, -1, -1))
    _fog_memo = (state.terrain, state.seen, rows)
    return rows


def _put(rows: list[str], cell: tuple[int, int], symbol: str) -> None:
    x, r = cell[0], SIZE - 1 - cell[1]
    rows[r] = f"{rows[r][:x]}{symbol}{rows[r][x + 1 :]}"


def observe(state: ReconState, steps_used: int) -> dict[str, Any]:
    """The observation as the plain dict `ReconObservation` describes (the env's
    `observation_model`): no model validation or dump on the hot path."""
    rows = list(_fog_rows(state))
    camps = []
    for camp in state.camps:
        if camp.position not in state.seen:
            continue  # never shown, and never counted apart from the total
        x, y = camp.position
        _put(rows, camp.position, SYMBOLS["camp" if camp.standing else "eliminated"])
        camps.append(
            {
                "x": x,
                "y": y,
                "strength": camp.strength,
                "status": "standing" if camp.standing else "eliminated",
            }
        )
    for squad in state.squads:
        if squad.active:
            x, y = squad.position
            here = rows[SIZE - 1 - y][x]
            _put(rows, squad.position, SYMBOLS["several"] if here in "ABC*" else squad.name)
    squads = [
        {
            "name": s.name,
            "x": s.position[0],
            "y": s.position[1],
            "strength": s.strength,
            "status": "active" if s.active else "destroyed",
        }
        for s in state.squads
    ]
    if state.eliminated == CAMPS:
        outcome = "won"
    elif not any(s.active for s in state.squads):
        outcome = "all_destroyed"
    else:
        outcome = "out_of_steps" if steps_used >= STEP_BUDGET else "playing"
    fresh = state.report_step == steps_used
    return {
        "squads": squads,
        "map": rows,
        "camps": camps,
        "eliminated": state.eliminated,
        "total_camps": CAMPS,
        "steps_left": STEP_BUDGET - steps_used,
        "total_strength": sum(s.strength for s in state.squads if s.active),
        "report": [describe(e) for e in state.last_events] if fresh else [],
        "status": outcome,
    }


def _squad_line(squad: dict[str, Any]) -> str:
    where = f"({squad['x']},{squad['y']})"
    if squad["status"] == "destroyed":
        return f"  {squad['name']}  destroyed  (last at {where}, strength was {squad['strength']})"
    return f"  {squad['name']}  at {where}  strength {squad['strength']}  active"


def _camp_line(camp: dict[str, Any]) -> str:
    return f"  camp at ({camp['x']},{camp['y']})  strength {camp['strength']}  {camp['status']}"


# The tactical map is what `core.render.grid` draws for one-character cells and labels
# 0-14 (every cell right-aligned to width 2, row labels to 3), written out directly:
# it is most of each step's text.
MAP_HEADER = "y\\x " + " ".join(str(x).rjust(2) for x in range(SIZE))
ROW_LABELS = [str(y).rjust(3) for y in range(SIZE - 1, -1, -1)]


def _map_text(rows: list[str]) -> str:
    lines = [f"{label}  {'  '.join(row)}" for label, row in zip(ROW_LABELS, rows, strict=True)]
    return MAP_HEADER + "\n" + "\n".join(lines)


def render(obs: dict[str, Any]) -> str:
    parts = []
    if obs["report"]:
        parts.append("Last step:\n" + "\n".join(f"  {line}" for line in obs["report"]))
    head = (
        f"Camps eliminated: {obs['eliminated']}/{obs['total_camps']}\n"
        f"Steps left:       {obs['steps_left']} of {STEP_BUDGET}\n"
        f"Active strength:  {obs['total_strength']}"
    )
    if obs["status"] != "playing":
        head += "\n" + STATUS_LINES[obs["status"]]
    parts.append(head)
    parts.append("Squads:\n" + "\n".join(_squad_line(s) for s in obs["squads"]))
    camps = obs["camps"]
    seen = "\n".join(_camp_line(c) for c in camps) if camps else "  none seen yet"
    parts.append(f"Enemy camps seen (of {obs['total_camps']}):\n{seen}")
    parts.append(
        f"Tactical map (north at the top, x east, y north):\n{_map_text(obs['map'])}\n{LEGEND}"
    )
    return "\n\n".join(parts)
