"""What research reveals, rule by rule: a clue at the first point, the equation at the
second. Built from the constants in `physics.py`, so the texts cannot drift from them."""

from __future__ import annotations

from textenvs.scenarios.megacity import physics as p

M = p.MATERIAL_SPECS


def _materials() -> str:
    specs = "; ".join(
        f"{name}: still {still}, sideways {side}, brittleness x{brittle}"
        for name, (still, side, brittle) in M.items()
    )
    return (
        "Chamber excess = max(0, stress - still capacity) + max(0, sideways load - "
        f"sideways capacity) x brittleness. Capacities: {specs}. Structural integrity = "
        "100 - the sum of the excess over all chambers. A district core needs a support "
        "column and zero excess."
    )


# (name, clue, decoded equation), in the order research decodes them.
RULES: tuple[tuple[str, str, str], ...] = (
    (
        "Support materials",
        "Columns fail in two ways: under still load and under sideways pull. "
        "Rigid stone is strongest until pulled sideways.",
        _materials(),
    ),
    (
        "Sideways gravity",
        "Stress creeps along mineral seams in the seam's pull direction and piles up "
        "downstream; chambers cut into a seam are pulled sideways.",
        f"Each step every seam cell passes {p.SEAM_FLOW_PCT}% of its stress (rounded "
        f"down) to the next cell downstream (x{p.CONDUIT_SEAM_GAIN} with a conduit on it); "
        f"the last cell keeps it (max {p.STRESS_MAX}). A chamber on a seam carries a "
        f"sideways load of {p.SEAM_PULL} per seam (x{p.CONDUIT_SEAM_GAIN} with a conduit).",
    ),
    (
        "Load transfer",
        "Hollowing out a cell loads its neighbours, yet can unload distant cells "
        "along the same seam.",
        f"Excavating a cell adds {p.EXCAVATE_NEIGHBOUR_LOAD} stress to each orthogonal "
        f"neighbour ({p.FAULT_NEIGHBOUR_LOAD} if the cell is a fault) and removes "
        f"{p.SEAM_RELIEF} from every cell 2 or more cells away on the same seam.",
    ),
    (
        "Airflow",
        "The prevailing current reverses periodically; shafts do not. A district "
        "breathes through the current in its own cell.",
        f"The base field flips sign every {p.REVERSAL_PERIOD} steps. A shaft adds "
        f"{p.VENT_MAG} along its direction to each cell from its start to the edge. "
        "Strength = |east-west| + |north-south|. Air target = "
        f"{p.AIR_BASE_TARGET} + sum over districts of {p.AIR_PER_FLOW} x (min(strength, "
        f"{p.FLOW_CAP}) - {p.O2_DEMAND}); the air index moves toward it by at most "
        f"{p.AIR_RATE} per step. A district core needs strength >= {p.DISTRICT_MIN_FLOW}.",
    ),
    (
        "Power and conduits",
        "Conduits on seams tap them for power but strengthen their pull; conduits "
        "in plain rock drain stress. Districts near conduits draw less.",
        f"Generation = {p.POWER_BASE_GEN} + {p.SEAM_TAP} per conduit cell on a seam. "
        f"Each district draws {p.DISTRICT_DRAW} per step ({p.DISTRICT_DRAW_CONNECTED} on "
        f"or next to a conduit). A conduit off the seams removes {p.CONDUIT_DAMP} stress "
        f"from its cell per step. Storage holds at most {p.POWER_CAP}; demand that "
        "storage cannot cover is a brownout.",
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
