"""Megacity rules: one step = the action, then the physics tick, then the reward terms.
Pure functions, no I/O; the equations live in `physics.py`, the initial maps in
`maps.py`."""

from __future__ import annotations

from typing import Any

from textenvs.core.env import Transition
from textenvs.scenarios.megacity import physics as p
from textenvs.scenarios.megacity import research
from textenvs.scenarios.megacity.state import (
    AIR_THRESHOLD,
    INTEGRITY_THRESHOLD,
    STEP_BUDGET,
    TARGET_DISTRICTS,
    Action,
    Cell,
    MegacityState,
    cell_name,
    evolve,
)

# --- reward terms (the specification's numbers) ----------------------------------------
R_INTEGRITY_GAIN = 2.0  # per point of integrity gained over the previous step
R_AIR_GAIN = 1.0  # per point of air gained
R_DISTRICT = 5.0  # per activated district
R_POWER_FIRST = 3.0  # first time power > 80
POWER_BONUS_LEVEL = 80
R_DECODED = 4.0  # per fully decoded rule
R_STEADY = 0.5  # integrity > 80 and air > 60 after the step
R_VICTORY = 40.0
R_INTEGRITY_LOW = -2.0  # per point below 80
R_AIR_LOW = -1.0  # per point below 60
R_CATASTROPHE = -40.0
# --- plan quality (beyond the specification: separates good plans from lucky ones) -----
R_MARGIN = 0.5  # at victory, per point of integrity above 80 and of air above 60
R_POWER_LEFT = 0.1  # at victory, per unit of power in storage
R_SIX_RUNNING = 0.5  # at victory, per step that ended with six districts running


def _spend(state: MegacityState, cost: int, what: str) -> tuple[MegacityState, str | None]:
    if cost > state.power:
        return state, f"{what} refused: it needs {cost} power, storage holds {state.power}."
    return evolve(state, power=state.power - cost), None


def apply_action(state: MegacityState, action: Action) -> tuple[MegacityState, str, int]:
    """The action's immediate effect: (state, report line, districts activated)."""
    kind = action.kind
    cell = action.cells[0] if action.cells else (0, 0)
    name = cell_name(cell)
    if kind == "wait":
        return state, "You wait.", 0
    if kind == "scan":
        new, refused = _spend(state, p.COSTS["scan"], "Scan")
        if refused:
            return state, refused, 0
        return evolve(new, scanned=True), "Diagnostic scan: seams and faults charted.", 0
    if kind == "research":
        if state.research >= research.TOTAL_POINTS:
            return state, "Research refused: every anomaly is already decoded.", 0
        new, refused = _spend(state, p.COSTS["research"], "Research")
        if refused:
            return state, refused, 0
        rule = research.RULES[state.research // p.POINTS_PER_RULE][0]
        return evolve(new, research=state.research + 1), f"Research advances on {rule}.", 0
    if kind == "excavate":
        if cell in state.chambers:
            return state, f"Excavate refused: {name} is already a chamber.", 0
        new, refused = _spend(state, p.COSTS["excavate"], "Excavate")
        if refused:
            return state, refused, 0
        stress = p.excavation_transfer(state, cell)
        chambers = tuple(sorted((*state.chambers, cell), key=_order))
        return evolve(new, stress=stress, chambers=chambers), f"Excavated {name}.", 0
    if kind == "support":
        material = action.material or "timber"
        if not p.unlocked(material, state.research):
            return state, f"Support refused: {material} is locked (research more).", 0
        if state.support_at(cell) == material:
            return state, f"Support refused: {name} already has a {material} column.", 0
        new, refused = _spend(state, p.support_cost(material), "Support")
        if refused:
            return state, refused, 0
        kept = tuple(s for s in state.supports if s[0] != cell)
        supports = tuple(sorted((*kept, (cell, material)), key=lambda s: _order(s[0])))
        return evolve(new, supports=supports), f"Placed a {material} column at {name}.", 0
    if kind == "vent":
        direction = action.direction or "north"
        if (cell, direction) in state.vents:
            return state, f"Vent refused: a shaft from {name} {direction} already exists.", 0
        new, refused = _spend(state, p.COSTS["vent"], "Vent")
        if refused:
            return state, refused, 0
        vents = (*state.vents, (cell, direction))
        return evolve(new, vents=vents), f"Dug a ventilation shaft from {name} {direction}.", 0
    if kind == "conduit":
        fresh = [c for c in action.cells if c not in state.conduits]
        if not fresh:
            return state, "Conduit refused: those cells already carry conduits.", 0
        new, refused = _spend(state, p.COSTS["conduit"] * len(fresh), "Conduit")
        if refused:
            return state, refused, 0
        conduits = tuple(sorted((*state.conduits, *fresh), key=_order))
        path = " ".join(cell_name(c) for c in action.cells)
        stress = p.conduit_damping(state, fresh)
        return (
            evolve(new, conduits=conduits, stress=stress),
            f"Installed a power conduit on {path}.",
            0,
        )
    return _district(state, cell)


def _district(state: MegacityState, cell: Cell) -> tuple[MegacityState, str, int]:
    name = cell_name(cell)
    why = None
    if cell in state.districts:
        why = "it is already a district"
    elif cell not in state.chambers:
        why = "it is solid rock (excavate it first)"
    else:
        field = p.flow_field(state.physics, state.base_flow, state.vents, state.steps)
        why = p.district_fault(state, cell, field)
    if why:
        return state, f"District refused at {name}: {why}.", 0
    new, refused = _spend(state, p.COSTS["district"], "District")
    if refused:
        return state, refused, 0
    districts = tuple(sorted((*state.districts, cell), key=_order))
    return evolve(new, districts=districts), f"District core at {name} is active.", 1


def _order(cell: Cell) -> tuple[int, int]:
    return cell[1], cell[0]


def tick(state: MegacityState) -> dict[str, Any]:
    """Time passes one step: sideways gravity, power, air, integrity, which districts
    run, and whether a threshold broke. Returns the changed fields (the caller applies
    them with one `evolve`)."""
    stress = p.seam_flow(state.stress, state)
    steps = state.steps + 1
    generation, demand = p.power_flows(state)
    storage = state.power + generation - demand
    brownout = storage < 0
    field = p.flow_field(state.physics, state.base_flow, state.vents, steps)
    air = p.next_air(state.physics, state.air, p.air_target(state, field))
    integrity = p.integrity_of(state, stress)
    offline = tuple(
        (cell, "brownout" if brownout else why)
        for cell in state.districts
        if brownout or (why := p.district_fault(state, cell, field, stress))
    )
    running = len(state.districts) - len(offline)
    breach = state.breach
    if state.districts and not breach:
        if integrity <= INTEGRITY_THRESHOLD:
            breach = f"integrity fell to {integrity} at step {steps}"
        elif air <= AIR_THRESHOLD:
            breach = f"air fell to {air} at step {steps}"
        elif brownout:
            breach = f"brownout at step {steps}"
    return {
        "stress": stress,
        "steps": steps,
        "power": max(0, min(state.physics.power_cap, storage)),
        "brownout": brownout,
        "air": air,
        "integrity": integrity,
        "offline": offline,
        "breach": breach,
        "six_running": state.six_running + (running >= TARGET_DISTRICTS and not breach),
    }


def step(
    state: MegacityState, action: Action, note: str | None = None
) -> Transition[MegacityState]:
    """One step; every reward term is reported by name in the `reward` event. `note`
    replaces the action's report line (an unreadable reply is reported as such)."""
    acted, line, activated = apply_action(state, action)
    line = note or line
    decoded = research.decoded_count(acted.research) - research.decoded_count(state.research)
    new = tick(acted)
    integrity, air, power = new["integrity"], new["air"], new["power"]
    terms: dict[str, float] = {}
    # Changes are paid both ways, so a dip the agent causes costs what its recovery pays.
    if integrity != state.integrity:
        name = "integrity_gain" if integrity > state.integrity else "integrity_loss"
        terms[name] = R_INTEGRITY_GAIN * (integrity - state.integrity)
    if air != state.air:
        terms["air_gain" if air > state.air else "air_loss"] = R_AIR_GAIN * (air - state.air)
    if activated and len(state.districts) < TARGET_DISTRICTS:
        terms["district"] = R_DISTRICT * activated  # the goal is six: no pay beyond
    if power > POWER_BONUS_LEVEL and not state.power_bonus_paid:
        terms["power_first_above_80"] = R_POWER_FIRST
        new["power_bonus_paid"] = True
    if decoded:
        terms["rule_decoded"] = R_DECODED * decoded
    if integrity > INTEGRITY_THRESHOLD and air > AIR_THRESHOLD:
        terms["steady"] = R_STEADY
    if integrity < INTEGRITY_THRESHOLD:
        terms["integrity_low"] = R_INTEGRITY_LOW * (INTEGRITY_THRESHOLD - integrity)
    if air < AIR_THRESHOLD:
        terms["air_low"] = R_AIR_LOW * (AIR_THRESHOLD - air)
    lines = [line]
    if new["breach"] and not state.breach:
        lines.append(f"THRESHOLD BROKEN: {new['breach']}; victory is no longer possible.")
    terminated = success = False
    if integrity <= 0 or air <= 0:
        terms["catastrophe"] = R_CATASTROPHE
        new["outcome"] = "collapse" if integrity <= 0 else "suffocation"
        lines.append(f"CATASTROPHE: {CATASTROPHES[new['outcome']]}")
        terminated = True
    elif new["steps"] >= STEP_BUDGET and is_victory(
        len(acted.districts) - len(new["offline"]), integrity, air, new["breach"]
    ):
        terms["victory"] = R_VICTORY
        terms["plan_quality"] = plan_quality(integrity, air, power, new["six_running"])
        new["outcome"] = "victory"
        terminated = success = True
        lines.append("VICTORY: six running districts, every threshold held to step 40.")
    final = evolve(acted, **new, power_net=power - state.power, report=tuple(lines))
    events: list[dict[str, Any]] = [
        {"type": "action", "command": action.command(), "result": line},
        {"type": "reward", "terms": terms},
    ]
    if activated:
        events.append({"type": "district", "at": cell_name(action.cells[0])})
    if new["breach"] and not state.breach:
        events.append({"type": "breach", "why": new["breach"]})
    if terminated:
        events.append({"type": final.outcome})
    return Transition(
        final,
        reward=float(sum(terms.values())),
        terminated=terminated,
        success=success,
        events=tuple(events),
    )


CATASTROPHES = {"collapse": "the city collapsed.", "suffocation": "the air is gone."}


def plan_quality(integrity: int, air: int, power: int, six_running: int) -> float:
    """The victory's quality: margins above the thresholds at the end, power left, and
    how long six districts have already run (slack a later mishap would have had)."""
    margins = (integrity - INTEGRITY_THRESHOLD) + (air - AIR_THRESHOLD)
    return R_MARGIN * margins + R_POWER_LEFT * power + R_SIX_RUNNING * six_running


def is_victory(running: int, integrity: int, air: int, breach: str) -> bool:
    """At least six running districts at step 40, integrity > 80, air > 60, and no
    threshold broken (nor a brownout) at any step since the first district."""
    return (
        running >= TARGET_DISTRICTS
        and integrity > INTEGRITY_THRESHOLD
        and air > AIR_THRESHOLD
        and not breach
    )
