"""What research reveals, rule by rule: a clue at the first point, the equation at the
second. Built from the constants in `physics.py`, so the texts cannot drift from them."""

from __future__ import annotations

from textenvs.scenarios.megacity import physics as p

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
    period = p.REVERSAL_PERIOD
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
        f"Each step every seam cell but the last passes {p.SEAM_FLOW_PCT}% of its stress "
        f"(x{p.CONDUIT_SEAM_GAIN} with a conduit) to the next one downstream; the last "
        f"keeps it (max {p.STRESS_MAX}). Sideways load on a chamber = {p.PULL_ON_SEAM} per "
        f"seam through its cell + {p.PULL_BESIDE_SEAM} per seam through a neighbour, "
        f"x{p.CONDUIT_SEAM_GAIN} with a conduit on the cell.",
    ),
    (
        "Load transfer",
        "Hollowing out a cell loads its four neighbours, but excavating a seam cell "
        "unloads the cells two or more steps away along that seam and the cells beside them.",
        f"Excavating a cell adds {p.EXCAVATE_NEIGHBOUR_LOAD} stress to each orthogonal "
        f"neighbour ({p.FAULT_NEIGHBOUR_LOAD} if it is a fault). Along each seam through "
        f"it, cells 2+ steps away lose {p.SEAM_RELIEF} and the cells beside those lose "
        f"{p.FLANK_RELIEF}.",
    ),
    (
        "Airflow",
        "The prevailing current reverses periodically, and the city is judged just after "
        "a reversal. Shafts never reverse: one across the current keeps a district's "
        "strength; one along it cancels in half the periods.",
        f"The base field is reversed after steps {_reversed_steps()}. A shaft adds "
        f"{p.VENT_MAG} along its direction to each cell from its start to the edge. "
        f"Strength = |east-west| + |north-south|; a district runs at >= "
        f"{p.DISTRICT_MIN_FLOW}. Air target = {p.AIR_BASE_TARGET} + sum over districts of "
        f"{p.AIR_PER_FLOW} x (min(strength, {p.FLOW_CAP}) - {p.O2_DEMAND}); air moves "
        f"toward it by at most {p.AIR_RATE} per step.",
    ),
    (
        "Power and conduits",
        "Districts draw power every step, less with a conduit on or beside them. "
        "Conduit cells on a seam generate power; one short tap cannot feed six districts.",
        f"Generation = {p.POWER_BASE_GEN} + {p.SEAM_TAP} per conduit cell on a seam. A "
        f"district draws {p.DISTRICT_DRAW} per step ({p.DISTRICT_DRAW_CONNECTED} on or next "
        f"to a conduit). Laying a conduit on a cell off the seams removes {p.CONDUIT_DAMP} "
        f"stress from it once. Storage holds {p.POWER_CAP}; demand it cannot cover is a "
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
