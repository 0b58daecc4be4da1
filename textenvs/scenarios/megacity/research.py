"""What research reveals, rule by rule: a clue at the first point, the equation at the
second. Built from the published numbers (`parameters.PHYSICS`) and the tables in
`physics.py`, so the texts cannot drift from them."""

from __future__ import annotations

from textenvs.scenarios.megacity import physics as p
from textenvs.scenarios.megacity.parameters import PHYSICS
from textenvs.scenarios.megacity.state import STEP_BUDGET

M = p.MATERIAL_SPECS


def _materials() -> str:
    caps = ", ".join(
        f"{name} {still}/{side}/x{brittle}" for name, (still, side, brittle) in M.items()
    )
    return (
        "A chamber's excess = max(0, stress - still cap) + max(0, sideways load - sideways "
        f"cap) x brittleness; integrity = 100 - the chambers' total excess (min 0). "
        f"Still/sideways/brittleness: {caps}. "
        f"Lodestone unlocks at {p.UNLOCK_AT['lodestone']} points. A district runs only "
        "with a column and zero excess."
    )


def _reversed_steps() -> str:
    """The steps (as the observation counts them) at which the base field is reversed,
    read off `phase_sign`: "8-15, 24-31 and 40"."""
    reversed_ = [t for t in range(STEP_BUDGET + 1) if p.phase_sign(PHYSICS, t) < 0]
    spans: list[list[int]] = []
    for t in reversed_:
        if spans and spans[-1][-1] == t - 1:
            spans[-1].append(t)
        else:
            spans.append([t])
    texts = [f"{s[0]}-{s[-1]}" if len(s) > 1 else f"{s[0]}" for s in spans]
    return ", ".join(texts[:-1]) + " and " + texts[-1]


# (name, clue, decoded equation), in the order research decodes them.
RULES: tuple[tuple[str, str, str], ...] = (
    (
        "Support materials",
        "Chambers on a seam or beside one are pulled sideways: basalt shatters there and "
        "timber gives no hold. One more research point unlocks mycelium, a column that "
        "holds sideways pull.",
        _materials(),
    ),
    (
        "Sideways gravity",
        "Seams carry stress downstream: upstream seam cells drain over time while the "
        "last cell fills up. A conduit on a cell speeds that and doubles the pull on a "
        "chamber there.",
        # One reading only: the floor of 24% with a conduit (not twice the floor of 12%),
        # and every receiving cell is capped before it passes its own share on, so a full
        # seam cell loses stress (95 taking and passing 11 ends at 89).
        "Each step, row seam first, every seam cell but the last passes "
        f"floor({PHYSICS.seam_flow_pct}% of its stress; "
        f"{PHYSICS.seam_flow_pct * PHYSICS.conduit_seam_gain}% with a conduit on it) to the "
        "next cell, all at once; each seam cell ends at "
        f"min({PHYSICS.stress_max}, stress + received) - passed. Sideways load on a chamber: "
        f"per seam, {PHYSICS.pull_on_seam} if it runs through the cell, else "
        f"{PHYSICS.pull_beside_seam} if through a neighbour; "
        f"x{PHYSICS.conduit_seam_gain} with a conduit on the cell.",
    ),
    (
        "Load transfer",
        "Hollowing out a cell loads its neighbours, but excavating a seam cell "
        "unloads the cells two or more steps away along that seam and the cells beside them.",
        f"Excavating a cell adds {PHYSICS.excavate_neighbour_load} stress to each orthogonal "
        f"neighbour ({PHYSICS.fault_neighbour_load} if the dug cell is a fault; max "
        f"{PHYSICS.stress_max}). Along each seam through it, cells 2+ steps away lose "
        f"{PHYSICS.seam_relief} and the cells beside those, off that seam, lose "
        f"{PHYSICS.flank_relief} (min 0).",
    ),
    (
        "Airflow",
        "The prevailing current reverses periodically, and the city is judged just after "
        "a reversal. Shafts never reverse: one across the current keeps a district's "
        "strength; one along it adds in one phase and subtracts in the other.",
        f"The base field is reversed at steps {_reversed_steps()} (the step shown). A shaft adds "
        f"{PHYSICS.vent_mag} along its direction to each cell from its start to the edge. "
        f"Strength = |east-west| + |north-south|; a district runs at >= "
        f"{PHYSICS.district_min_flow}. Air target = {PHYSICS.air_base_target} + sum over all "
        f"districts of {PHYSICS.air_per_flow} x (min(strength, {PHYSICS.flow_cap}) - "
        f"{PHYSICS.o2_demand}), within 0-100; "
        f"air moves toward it by at most {PHYSICS.air_rate} per step.",
    ),
    (
        "Power and conduits",
        "Districts draw power every step, less with a conduit on or beside them. "
        "Conduit cells on a seam generate power; one short tap cannot feed six districts.",
        f"Generation = {PHYSICS.power_base_gen} + {PHYSICS.seam_tap} per conduit cell on a "
        f"seam, from the step it is laid. A district draws {PHYSICS.district_draw} per step "
        f"({PHYSICS.district_draw_connected} on or next to a conduit). Each step storage += "
        f"generation - draw - action cost, max {PHYSICS.power_cap}; below 0 is a brownout "
        "(storage 0, every district offline). Laying a conduit on a cell off the seams "
        f"removes {PHYSICS.conduit_damp} stress from it once (min 0).",
    ),
)
TOTAL_POINTS = len(RULES) * p.POINTS_PER_RULE


def status(rule_index: int, points: int) -> str:
    done = points - rule_index * p.POINTS_PER_RULE
    if done >= p.POINTS_PER_RULE:
        return "decoded"
    return "clue" if done >= 1 else "unknown"


def decoded_count(points: int) -> int:
    return min(len(RULES), points // p.POINTS_PER_RULE)
