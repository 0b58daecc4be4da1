"""The numbers of Megacity's physics, as one value.

`PHYSICS` is the published world. The state carries its `Physics`, and every equation in
`physics.py` reads the numbers from there, so a variant world (one mechanism switched
off: `replace(PHYSICS, seam_flow_pct=0)`, made with `MegacityEnv(physics=...)`) changes
the world and any model of it built from the same value, without touching a module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Physics:
    # --- stress and sideways gravity ---------------------------------------------------
    stress_max: int = 100
    seam_flow_pct: int = 12  # % of a seam cell's stress pulled one cell downstream per step
    conduit_seam_gain: int = 2  # a conduit on a cell doubles its seam flow and sideways load
    conduit_damp: int = 6  # stress a conduit removes once from an off-seam cell, when laid
    pull_on_seam: int = 20  # sideways load on a chamber per seam running through its cell
    pull_beside_seam: int = 10  # ... per seam running alongside it (an orthogonal neighbour)
    # --- excavation load transfer ------------------------------------------------------
    excavate_neighbour_load: int = 6  # stress added to each orthogonal neighbour
    fault_neighbour_load: int = 14  # ... when the excavated cell is a fault
    seam_relief: int = 18  # stress removed from seam cells 2+ cells away on the same seam...
    flank_relief: int = 18  # ... and from the off-seam cells beside those
    # --- air ---------------------------------------------------------------------------
    reversal_period: int = 8  # the base airflow flips sign every 8 completed steps
    vent_mag: int = 2  # a shaft adds this much flow along its direction to each cell it crosses
    air_base_target: int = 85
    flow_cap: int = 6  # flow above this does not help a district
    o2_demand: int = 5  # flow a district needs to breathe without drawing the air index down
    air_per_flow: int = 3  # air-target points per unit of flow surplus/deficit at a district
    air_rate: int = 8  # the air index moves toward its target by at most this per step
    district_min_flow: int = 3  # a district core needs at least this flow to run
    # --- power -------------------------------------------------------------------------
    power_cap: int = 100
    power_base_gen: int = 1
    seam_tap: int = 2  # generation per conduit cell lying on a seam
    district_draw: int = 3  # power a district draws per step...
    district_draw_connected: int = 2  # ... on or next to a conduit cell


PHYSICS = Physics()
