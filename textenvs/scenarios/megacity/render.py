"""Megacity observation -> text (the only place that writes what the agent reads).

Shows the city, the maps and the qualitative component descriptors; never the equations
or constants of `physics.py`, except the rule texts research has decoded.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from textenvs.core.render import grid, status
from textenvs.scenarios.megacity import physics as p
from textenvs.scenarios.megacity import research
from textenvs.scenarios.megacity.state import (
    AIR_THRESHOLD,
    COLS,
    INTEGRITY_THRESHOLD,
    MATERIALS,
    SIZE,
    STEP_BUDGET,
    TARGET_DISTRICTS,
    Cell,
    MegacityState,
    Vec,
    cell_name,
)

DESCRIPTORS = {
    "timber": "flexible wood: modest strength under still load, gives a little under sideways pull",
    "basalt": "rigid stone: very strong under still load, shatters under sideways pull",
    "mycelium": "living fungal lattice: fair still strength, flows with sideways pull",
    "lodestone": "magnetised ore: strongest under still load, holds against sideways pull",
    "vent": "a shaft from a cell straight to the grid edge; adds a permanent current along it",
    "conduit": "1-3 adjacent cells; carries power to nearby districts, taps seams, and "
    "tugs on the local gravity",
    "district": "a district core in a supported, ventilated chamber; raises oxygen and "
    "power demand",
}
SITE_LEGEND = ". solid rock, o open chamber, S supported chamber, D district; + conduit"
STATUS_LINES = {
    "victory": "EPISODE OVER: victory - six districts and every threshold held.",
    "collapse": "EPISODE OVER: structural collapse.",
    "suffocation": "EPISODE OVER: the air ran out.",
    "out_of_steps": "EPISODE OVER: step 40 reached without victory.",
}
ROW_LABELS = [str(r + 1) for r in range(SIZE - 1, -1, -1)]


def flow_text(vec: Vec) -> str:
    dx, dy = vec
    text = (f"E{dx}" if dx > 0 else f"W{-dx}" if dx < 0 else "") + (
        f"N{dy}" if dy > 0 else f"S{-dy}" if dy < 0 else ""
    )
    return text or "."


def _site(state: MegacityState, cell: Cell) -> str:
    if cell in state.districts:
        mark = "D"
    elif cell in state.chambers:
        mark = "S" if state.support_at(cell) else "o"
    else:
        mark = "."
    return mark + ("+" if cell in state.conduits else "")


@cache
def _components(points: int) -> tuple[dict[str, Any], ...]:
    out = [
        {
            "name": m,
            "kind": "support",
            "available": p.unlocked(m, points),
            "cost": p.support_cost(m),
            "descriptor": DESCRIPTORS[m],
        }
        for m in MATERIALS
    ]
    for kind in ("vent", "conduit", "district"):
        out.append(
            {
                "name": kind,
                "kind": kind,
                "available": True,
                "cost": p.COSTS[kind],
                "descriptor": DESCRIPTORS[kind],
            }
        )
    return tuple(out)


def observe(state: MegacityState, steps_used: int) -> dict[str, Any]:
    """The observation as the plain dict `MegacityObservation` describes (the env's
    `observation_model`): no model validation or dump on the hot path."""
    field = p.flow_field(state.base_flow, state.vents, state.steps)
    rows = range(SIZE - 1, -1, -1)  # north first
    items = [
        {
            "name": name,
            "status": research.status(i, state.research),
            "text": {"unknown": "", "clue": clue, "decoded": text}[
                research.status(i, state.research)
            ],
        }
        for i, (name, clue, text) in enumerate(research.RULES)
    ]
    done = state.outcome
    if done == "playing" and steps_used >= STEP_BUDGET:
        done = "out_of_steps"
    seams = faults = None
    if state.scanned:
        seams = [
            (
                f"row {s.cells[0][1] + 1}"
                if s.direction in ("east", "west")
                else f"column {COLS[s.cells[0][0]]}"
            )
            + f" pulling {s.direction}"
            for s in state.seams
        ]
        faults = [cell_name(c) for c in state.faults]
    return {
        "step": state.steps,
        "steps_left": STEP_BUDGET - steps_used,
        "districts": len(state.districts),
        "district_cells": [cell_name(c) for c in state.districts],
        "integrity": state.integrity,
        "air": state.air,
        "power": state.power,
        "power_net": state.power_net,
        "brownout": state.brownout,
        "stress": [list(state.stress[r]) for r in rows],
        "sites": [[_site(state, (c, r)) for c in range(SIZE)] for r in rows],
        "supports": {cell_name(c): m for c, m in state.supports},
        "conduits": [cell_name(c) for c in state.conduits],
        "vents": [f"{cell_name(c)} {d}" for c, d in state.vents],
        "airflow": [[flow_text(field[r][c]) for c in range(SIZE)] for r in rows],
        "airflow_strength": [[p.strength(field[r][c]) for c in range(SIZE)] for r in rows],
        # fresh copies: the memoised dicts must not be shared with callers
        "components": [dict(c) for c in _components(state.research)],
        "research_points": state.research,
        "research": items,
        "seams": seams,
        "faults": faults,
        "report": list(state.report),
        "status": done,
    }


def _table(cells: list[list[str]]) -> str:
    return grid(cells, col_labels=list(COLS), row_labels=ROW_LABELS)


def render(obs: dict[str, Any]) -> str:
    power = f"{obs['power']} units (last step {obs['power_net']:+d})"
    if obs["brownout"]:
        power += " BROWNOUT: demand exceeded storage"
    district_list = f" ({', '.join(obs['district_cells'])})" if obs["district_cells"] else ""
    head = status(
        [
            ("Step", f"{obs['step']} of {STEP_BUDGET} ({obs['steps_left']} left)"),
            ("Districts", f"{obs['districts']} of {TARGET_DISTRICTS}{district_list}"),
            ("Integrity", f"{obs['integrity']}% (keep above {INTEGRITY_THRESHOLD})"),
            ("Air index", f"{obs['air']}% (keep above {AIR_THRESHOLD})"),
            ("Power", power),
        ]
    )
    parts = [head]
    if obs["status"] != "playing":
        parts.append(STATUS_LINES[obs["status"]])
    if obs["report"]:
        parts.append("Last step: " + " ".join(obs["report"]))
    parts.append(
        "Rock stress (0-100), row 5 (north) at the top:\n"
        + _table([[str(v) for v in row] for row in obs["stress"]])
    )
    sites = "Sites (" + SITE_LEGEND + "):\n" + _table(obs["sites"])
    details = [
        ("Supports", ", ".join(f"{c} {m}" for c, m in obs["supports"].items()) or "none"),
        ("Conduits", " ".join(obs["conduits"]) or "none"),
        ("Shafts", ", ".join(obs["vents"]) or "none"),
    ]
    parts.append(sites + "\n" + status(details))
    parts.append(
        "Airflow (E2N1 = 2 east and 1 north; strength = sum of the parts; . calm):\n"
        + _table(obs["airflow"])
    )
    if obs["seams"] is not None and obs["faults"] is not None:
        geology = f"Seams: {'; '.join(obs['seams'])}. Faults: {', '.join(obs['faults'])}."
    else:
        geology = "Geology: not charted yet (scan charts seams and faults)."
    parts.append(geology)
    lines = ["Components (power cost):"]
    for comp in obs["components"]:
        label = f"{comp['name']} ({comp['kind']})" if comp["kind"] == "support" else comp["name"]
        lock = "" if comp["available"] else " [locked: research further]"
        lines.append(f"- {label}, {comp['cost']}: {comp['descriptor']}{lock}")
    lines.append(
        f"- excavate, {p.COSTS['excavate']}; research, {p.COSTS['research']}; "
        f"scan, {p.COSTS['scan']}; wait, 0"
    )
    parts.append("\n".join(lines))
    lines = [f"Research: {obs['research_points']} of {research.TOTAL_POINTS} points"]
    for item in obs["research"]:
        text = f": {item['text']}" if item["text"] else ""
        lines.append(f"- {item['name']} [{item['status']}]{text}")
    parts.append("\n".join(lines))
    return "\n\n".join(parts)
