"""What research reveals, rule by rule: a clue at the first point, the equation at the
second. Built from the published numbers (`parameters.PHYSICS`) and the tables in
`physics.py`, so the texts cannot drift from them."""

from __future__ import annotations

from textenvs.scenarios.megacity import physics as p
from textenvs.scenarios.megacity.parameters import PHYSICS

M = p.MATERIAL_SPECS


def _materials() -> str:
    caps = ", ".join(
        f"{name} {still}/{side}/x{brittle}" for name, (still, side, brittle) in M.items()
    )
    return (
        "Excess = max(0, stress - still cap) + max(0, sideways load - sideways cap) x "
        f"brittleness; integrity = 100 - total excess. Still/sideways/brittleness: {caps}. "
        f"Lodestone unlocks at {p.UNLOCK_AT['lodestone']} points. A district runs only "
        "with a column and zero excess."
    )


def _reversed_steps() -> str:
    period = PHYSICS.reversal_period
    spans = [f"{s}-{s + period - 1}" for s in range(period, 40, 2 * period)]
    return ", ".join(spans) + f" and from step {5 * period} (the final check)"


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
        f"Each step every seam cell but the last passes {PHYSICS.seam_flow_pct}% of its "
        f"stress (x{PHYSICS.conduit_seam_gain} with a conduit) to the next one downstream; "
        f"the last keeps it (max {PHYSICS.stress_max}). Sideways load on a chamber = "
        f"{PHYSICS.pull_on_seam} per seam through its cell + {PHYSICS.pull_beside_seam} per "
        f"seam through a neighbour, x{PHYSICS.conduit_seam_gain} with a conduit on the cell.",
    ),
    (
        "Load transfer",
        "Hollowing out a cell loads its four neighbours, but excavating a seam cell "
        "unloads the cells two or more steps away along that seam and the cells beside them.",
        f"Excavating a cell adds {PHYSICS.excavate_neighbour_load} stress to each orthogonal "
        f"neighbour ({PHYSICS.fault_neighbour_load} if it is a fault). Along each seam "
        f"through it, cells 2+ steps away lose {PHYSICS.seam_relief} and the cells beside "
        f"those lose {PHYSICS.flank_relief}.",
    ),
    (
        "Airflow",
        "The prevailing current reverses periodically, and the city is judged just after "
        "a reversal. Shafts never reverse: one across the current keeps a district's "
        "strength; one along it cancels in half the periods.",
        f"The base field is reversed after steps {_reversed_steps()}. A shaft adds "
        f"{PHYSICS.vent_mag} along its direction to each cell from its start to the edge. "
        f"Strength = |east-west| + |north-south|; a district runs at >= "
        f"{PHYSICS.district_min_flow}. Air target = {PHYSICS.air_base_target} + sum over "
        f"districts of {PHYSICS.air_per_flow} x (min(strength, {PHYSICS.flow_cap}) - "
        f"{PHYSICS.o2_demand}); air moves toward it by at most {PHYSICS.air_rate} per step.",
    ),
    (
        "Power and conduits",
        "Districts draw power every step, less with a conduit on or beside them. "
        "Conduit cells on a seam generate power; one short tap cannot feed six districts.",
        f"Generation = {PHYSICS.power_base_gen} + {PHYSICS.seam_tap} per conduit cell on a "
        f"seam. A district draws {PHYSICS.district_draw} per step "
        f"({PHYSICS.district_draw_connected} on or next to a conduit). Laying a conduit on a "
        f"cell off the seams removes {PHYSICS.conduit_damp} stress from it once. Storage "
        f"holds {PHYSICS.power_cap}; demand it cannot cover is a "
        "brownout and every district goes offline.",
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
