"""Megacity observation -> text (the only place that writes what the agent reads).

Shows the city, the maps and the qualitative component descriptors; never the equations
or constants of `physics.py`, except the rule texts research has decoded.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import chain
from operator import itemgetter
from typing import Any

from textenvs.core.render import status
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
    VecGrid,
    cell_name,
)

DESCRIPTORS = {
    "timber": "wood: fair still strength, no hold against sideways pull",
    "basalt": "stone: strong under still load, shatters under sideways pull",
    "mycelium": "fungal lattice: modest still strength, holds sideways pull",
    "lodestone": "magnetised ore: strongest under still load, little sideways hold",
    "vent": "a shaft from a cell to the grid edge: a permanent current along it",
    "conduit": "1-3 adjacent cells: feeds districts beside it, taps seams, tugs on gravity",
    "district": "a core in a supported, ventilated chamber; draws power each step",
}
#: what a component's listed cost is counted per (the rest cost it once per action);
#: a new cell is one without a conduit yet
COST_UNITS = {"conduit": " per new cell"}
SITE_LEGEND = (
    ". rock, | column in rock, o chamber, S supported, D district running, X offline; + conduit"
)
STATUS_LINES = {
    "victory": "EPISODE OVER: victory - six districts and every threshold held.",
    "collapse": "EPISODE OVER: structural collapse.",
    "suffocation": "EPISODE OVER: the air ran out.",
    "out_of_steps": "EPISODE OVER: step 40 reached without victory.",
}
ROW_LABELS = [str(r + 1) for r in range(SIZE - 1, -1, -1)]
_NORTH_FIRST = range(SIZE - 1, -1, -1)  # grids are stored south first, shown north first


def flow_text(vec: Vec) -> str:
    dx, dy = vec
    text = (f"E{dx}" if dx > 0 else f"W{-dx}" if dx < 0 else "") + (
        f"N{dy}" if dy > 0 else f"S{-dy}" if dy < 0 else ""
    )
    return text or "."


# The parts below change only when what they are drawn from changes (a build, a vent, a
# reversal, a research point), far less often than once a step: memoise each on exactly
# its inputs (immutable tuples), in bounded caches. Callers get fresh lists.
@lru_cache(maxsize=1024)
def _sites(
    districts: tuple[Cell, ...],
    offline: frozenset[Cell],
    chambers: tuple[Cell, ...],
    supports: tuple[tuple[Cell, str], ...],
    conduits: tuple[Cell, ...],
) -> tuple[tuple[str, ...], ...]:
    """The sites map, north row first: "." rock, "|" a column in undug rock, "o" chamber,
    "S" supported chamber, "D" district, with a "+" suffix for a conduit."""
    supported = {cell for cell, _material in supports}
    rows = []
    for r in _NORTH_FIRST:
        row = []
        for c in range(SIZE):
            cell = (c, r)
            if cell in districts:
                mark = "X" if cell in offline else "D"
            elif cell in chambers:
                mark = "S" if cell in supported else "o"
            else:
                mark = "|" if cell in supported else "."
            row.append(mark + ("+" if cell in conduits else ""))
        rows.append(tuple(row))
    return tuple(rows)


@lru_cache(maxsize=512)
def _airflow(field: VecGrid) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[int, ...], ...]]:
    """(airflow texts, strengths), north row first."""
    rows = [field[r] for r in _NORTH_FIRST]
    return (
        tuple(tuple(flow_text(v) for v in row) for row in rows),
        tuple(tuple(p.strength(v) for v in row) for row in rows),
    )


@lru_cache(maxsize=1024)
def _named(
    districts: tuple[Cell, ...],
    supports: tuple[tuple[Cell, str], ...],
    conduits: tuple[Cell, ...],
    vents: tuple[tuple[Cell, str], ...],
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], tuple[str, ...], tuple[str, ...]]:
    """The built things by cell name: districts, (cell, material), conduits, shafts."""
    return (
        tuple(cell_name(c) for c in districts),
        tuple((cell_name(c), m) for c, m in supports),
        tuple(cell_name(c) for c in conduits),
        tuple(f"{cell_name(c)} {d}" for c, d in vents),
    )


@lru_cache(maxsize=64)
def _research_items(points: int) -> tuple[tuple[str, str, str], ...]:
    """(name, status, text shown) per rule."""
    out = []
    for i, (name, clue, text) in enumerate(research.RULES):
        level = research.status(i, points)
        out.append((name, level, {"unknown": "", "clue": clue, "decoded": text}[level]))
    return tuple(out)


@lru_cache(maxsize=64)
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
    field = p.flow_field(state.physics, state.base_flow, state.vents, state.steps)
    airflow, airflow_strength = _airflow(field)
    generation, draw = p.power_flows(state)
    sites = _sites(
        state.districts,
        frozenset(cell for cell, _why in state.offline),
        state.chambers,
        state.supports,
        state.conduits,
    )
    districts, supports, conduits, vents = _named(
        state.districts, state.supports, state.conduits, state.vents
    )
    done = state.outcome
    if done == "playing" and steps_used >= STEP_BUDGET:
        done = "out_of_steps"
    points = state.research
    if state.withheld:  # the variant: no texts while playing, every rule's at the end
        points = research.TOTAL_POINTS if done != "playing" else points
    items = [
        {"name": name, "status": level, "text": "" if withhold else text}
        for name, level, text in _research_items(points)
        for withhold in [state.withheld and done == "playing"]
    ]
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
        "district_cells": list(districts),
        "district_airflow": {
            name: p.strength(field[r][c])
            for name, (c, r) in zip(districts, state.districts, strict=True)
        },
        "offline": [f"{cell_name(cell)} ({why})" for cell, why in state.offline],
        "breach": state.breach or None,
        "integrity": state.integrity,
        "air": state.air,
        "air_target": p.air_target(state, field),
        "power": state.power,
        "power_net": state.power_net,
        "power_generation": generation,
        "power_draw": draw,
        "brownout": state.brownout,
        "stress": [list(state.stress[r]) for r in _NORTH_FIRST],
        "sites": [list(row) for row in sites],
        "supports": dict(supports),
        "conduits": list(conduits),
        "vents": list(vents),
        "airflow": [list(row) for row in airflow],
        "airflow_strength": [list(row) for row in airflow_strength],
        # fresh copies: the memoised dicts must not be shared with callers
        "components": [dict(c) for c in _components(state.research)],
        "research_points": state.research,
        "research": items,
        "seams": seams,
        "faults": faults,
        "report": list(state.report),
        "status": done,
        **({"withheld": True} if state.withheld else {}),
    }


# The 5x5 maps are what `core.render.grid` draws for them (one-digit row labels, column
# labels A-E), written directly: one %-format per row instead of a join of rjusts.
@lru_cache(maxsize=16)
def _layout(width: int, kind: str) -> tuple[str, str]:
    """(the label line, a row's format) for cells `width` wide; kind "s" or "d"."""
    header = "  " + " ".join(c.rjust(width) for c in COLS)  # blank corner, a space
    return header, " ".join([f"%{width}{kind}"] * SIZE)


def _grid(rows: list[list[Any]] | tuple[tuple[Any, ...], ...], width: int, kind: str) -> str:
    header, row_format = _layout(width, kind)
    if width == 1 and kind == "s":  # grid pads nothing then (an empty cell stays empty)
        texts = [" ".join(row) for row in rows]
    else:
        texts = [row_format % tuple(row) for row in rows]
    lines = [header] + [
        f"{label} {text}".rstrip() for label, text in zip(ROW_LABELS, texts, strict=True)
    ]
    return "\n".join(lines)


# Rendering memoises each block on the observation's contents (as tuples, so hashable):
# the maps and lists repeat from step to step while the numbers around them change.
@lru_cache(maxsize=1024)
def _table(cells: tuple[tuple[str, ...], ...]) -> str:
    return _grid(cells, max(1, *map(len, chain.from_iterable(cells))), "s")


def _stress_table(values: list[list[int]]) -> str:
    """The stress map: it changes nearly every step (seam flow), so a memo would miss."""
    # The widest number is the largest or, with a sign, the smallest.
    lo, hi = min(map(min, values)), max(map(max, values))
    width = max(1, len(str(lo)), len(str(hi)))
    return "Rock stress (0-100), row 5 (north) at the top:\n" + _grid(values, width, "d")


@lru_cache(maxsize=256)
def _sites_block(
    sites: tuple[tuple[str, ...], ...],
    supports: tuple[tuple[str, str], ...],
    conduits: tuple[str, ...],
    vents: tuple[str, ...],
) -> str:
    details = [
        ("Supports", ", ".join(f"{c} {m}" for c, m in supports) or "none"),
        ("Conduits", " ".join(conduits) or "none"),
        ("Shafts", ", ".join(vents) or "none"),
    ]
    return "Sites (" + SITE_LEGEND + "):\n" + _table(sites) + "\n" + status(details)


@lru_cache(maxsize=256)
def _airflow_block(airflow: tuple[tuple[str, ...], ...]) -> str:
    return "Airflow (E2N1 = 2 east and 1 north, strength 3; . calm):\n" + _table(airflow)


@lru_cache(maxsize=64)
def _components_block(components: tuple[tuple[str, str, bool, int, str], ...]) -> str:
    lines = ["Components (power cost):"]
    for name, kind, available, cost, descriptor in components:
        label = f"{name} ({kind})" if kind == "support" else name
        lock = "" if available else " [locked: research further]"
        lines.append(f"- {label}, {cost}{COST_UNITS.get(name, '')}: {descriptor}{lock}")
    lines.append(
        f"- excavate, {p.COSTS['excavate']}; research, {p.COSTS['research']}; "
        f"scan, {p.COSTS['scan']}; wait, 0"
    )
    return "\n".join(lines)


@lru_cache(maxsize=64)
def _research_block(points: int, items: tuple[tuple[str, str, str], ...]) -> str:
    lines = [f"Research: {points} of {research.TOTAL_POINTS} points"]
    for name, level, text in items:
        shown = f": {text}" if text else ""
        lines.append(f"- {name} [{level}]{shown}")
    return "\n".join(lines)


# The status block at the top, padded as `status` pads it, with a slot per value.
_HEAD = status([(name, "{}") for name in ("Step", "Districts", "Integrity", "Air index", "Power")])
_COMPONENT = itemgetter("name", "kind", "available", "cost", "descriptor")
_RESEARCH_ITEM = itemgetter("name", "status", "text")
# The withheld-knowledge variant: research texts are shown only at the end (ended, playing).
WITHHELD_NOTE = (
    "Every rule, as full research reveals it (the same in every episode).",
    "Research texts are withheld in this variant: research still unlocks materials and "
    "pays for decoded rules, and every rule's text is shown when the episode ends.",
)


def _district_airflow(obs: dict[str, Any]) -> str:
    """Each district's airflow strength, which its running and the air target depend on."""
    shown = ", ".join(f"{cell} {value}" for cell, value in obs["district_airflow"].items())
    return f" (airflow: {shown})" if shown else ""


def render(obs: dict[str, Any]) -> str:
    power = (
        f"{obs['power']} units (last step {obs['power_net']:+d} with costs; "
        f"generation {obs['power_generation']}, draw {obs['power_draw']} a step)"
    )
    if obs["brownout"]:
        power += " BROWNOUT: demand exceeded storage"
    head = _HEAD.format(
        f"{obs['step']} of {STEP_BUDGET} ({obs['steps_left']} left)",
        f"{obs['districts']} of {TARGET_DISTRICTS}{_district_airflow(obs)}",
        f"{obs['integrity']}% (keep above {INTEGRITY_THRESHOLD})",
        f"{obs['air']}% (keep above {AIR_THRESHOLD}; target {obs['air_target']})",
        power,
    )
    parts = [head]
    if obs["offline"]:
        parts.append("Offline districts (they do not count): " + ", ".join(obs["offline"]))
    parts.append(
        f"Victory forfeited: {obs['breach']}."
        if obs["breach"]
        else f"Thresholds: held (from the first district on, every step needs integrity > "
        f"{INTEGRITY_THRESHOLD}, air > {AIR_THRESHOLD} and no brownout)."
    )
    if obs["status"] != "playing":
        parts.append(STATUS_LINES[obs["status"]])
    if obs["report"]:
        parts.append("Last step: " + " ".join(obs["report"]))
    parts.append(_stress_table(obs["stress"]))
    parts.append(
        _sites_block(
            tuple(map(tuple, obs["sites"])),
            tuple(obs["supports"].items()),
            tuple(obs["conduits"]),
            tuple(obs["vents"]),
        )
    )
    parts.append(_airflow_block(tuple(map(tuple, obs["airflow"]))))
    if obs["seams"] is not None and obs["faults"] is not None:
        geology = f"Seams: {'; '.join(obs['seams'])}. Faults: {', '.join(obs['faults'])}."
    else:
        geology = "Geology: not charted yet (scan charts seams and faults)."
    parts.append(geology)
    parts.append(_components_block(tuple(map(_COMPONENT, obs["components"]))))
    items = tuple(map(_RESEARCH_ITEM, obs["research"]))
    parts.append(_research_block(obs["research_points"], items))
    if obs.get("withheld"):
        parts.append(WITHHELD_NOTE[obs["status"] == "playing"])
    return "\n\n".join(parts)
