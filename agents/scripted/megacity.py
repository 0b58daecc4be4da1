"""Megacity planner: an engineer who knows the equations (all of which research reveals)
but reads only the observation.

1. `scan` to chart the seams and faults; from then on the observation shows the whole
   world, so the planner rebuilds it (`rebuild`) every turn.
2. Propose plans: six sites (the few cells clear of sideways pull take basalt, cells on or
   beside a seam take mycelium or lodestone, which research unlocks), shafts across the
   prevailing current so each site keeps its strength through reversals, one or two
   seam taps placed to feed the sites, and the step from which districts may open.
3. Rehearse each plan with the equations on the rebuilt world and follow the first one
   that wins. Only when none wins, it also tries the site sets whose lines need shafts in
   both directions (a weak current with sites at both ends of a line). Each turn it
   checks the world is where the rehearsal said; if not (say a reply was lost) it plans
   again from there.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from textenvs.agents.scripted import ScriptedPolicy
from textenvs.agents.scripted.megacity_plans import Plan, proposals, rank, relief_proposals
from textenvs.scenarios.megacity import physics as p
from textenvs.scenarios.megacity import rules
from textenvs.scenarios.megacity.parameters import PHYSICS, Physics
from textenvs.scenarios.megacity.state import (
    COLS,
    SIZE,
    STEP_BUDGET,
    Action,
    Cell,
    MegacityState,
    Seam,
)

WAIT = Action("wait")
MAX_REHEARSALS = 36
MAX_RELIEF_REHEARSALS = 72  # plans with a relief dig: up to six dig cells, 12 plans each


def parse_cell(text: str) -> Cell:
    return COLS.index(text[0].upper()), int(text[1:]) - 1


def parse_flow(text: str) -> tuple[int, int]:
    dx = dy = 0
    for letter, amount in re.findall(r"([NSEW])(\d+)", text):
        value = int(amount)
        dx += {"E": value, "W": -value}.get(letter, 0)
        dy += {"N": value, "S": -value}.get(letter, 0)
    return dx, dy


def north_first(rows: list[list[Any]]) -> dict[Cell, Any]:
    """A grid as the observation shows it (row 5 first) -> {cell: value}."""
    return {(c, SIZE - 1 - i): rows[i][c] for i in range(SIZE) for c in range(SIZE)}


def parse_seams(texts: list[str]) -> tuple[Seam, ...]:
    """'row 3 pulling east' -> Seam with its cells upstream first."""
    seams = []
    for text in texts:
        what, index, _, direction = text.split()
        if what == "row":
            cells = [(c, int(index) - 1) for c in range(SIZE)]
        else:
            cells = [(COLS.index(index), r) for r in range(SIZE)]
        if direction in ("west", "south"):
            cells.reverse()
        seams.append(Seam(tuple(cells), direction))
    return tuple(seams)


def rebuild(obs: dict[str, Any], physics: Physics = PHYSICS) -> MegacityState:
    """The world as the (scanned) observation shows it, under the physics the planner
    believes in. The base airflow is the shown field less the shafts, with the reversal
    undone."""
    vents = tuple((parse_cell(v.split()[0]), v.split()[1]) for v in obs["vents"])
    shown = {c: parse_flow(v) for c, v in north_first(obs["airflow"]).items()}
    for (c, r), (vx, vy) in p.vent_cells(vents):
        dx, dy = shown[(c, r)]
        shown[(c, r)] = (dx - vx * physics.vent_mag, dy - vy * physics.vent_mag)
    sign = p.phase_sign(physics, obs["step"])
    base = tuple(
        tuple((sign * shown[(c, r)][0], sign * shown[(c, r)][1]) for c in range(SIZE))
        for r in range(SIZE)
    )
    stress = north_first(obs["stress"])
    sites = north_first(obs["sites"])
    order = [(c, r) for r in range(SIZE) for c in range(SIZE)]
    return MegacityState(
        stress=tuple(tuple(stress[(c, r)] for c in range(SIZE)) for r in range(SIZE)),
        seams=parse_seams(obs["seams"]),
        faults=tuple(parse_cell(f) for f in obs["faults"]),
        base_flow=base,
        chambers=tuple(c for c in order if sites[c].rstrip("+") not in (".", "|")),
        supports=tuple(
            sorted(((parse_cell(k), m) for k, m in obs["supports"].items()), key=_order)
        ),
        districts=tuple(sorted((parse_cell(d) for d in obs["district_cells"]), key=rank)),
        vents=vents,
        conduits=tuple(sorted((parse_cell(c) for c in obs["conduits"]), key=rank)),
        integrity=obs["integrity"],
        air=obs["air"],
        power=obs["power"],
        brownout=obs["brownout"],
        steps=obs["step"],
        research=obs["research_points"],
        scanned=True,
        breach=obs["breach"] or "",
        physics=physics,
    )


def _order(item: tuple[Cell, str]) -> tuple[int, int]:
    return rank(item[0])


def dynamics(state: MegacityState) -> tuple[Any, ...]:
    """What the rehearsal predicts and the next observation must confirm."""
    return (
        state.stress,
        state.chambers,
        state.supports,
        state.districts,
        state.vents,
        state.conduits,
        state.integrity,
        state.air,
        state.power,
        state.steps,
        state.research,
    )


def next_action(state: MegacityState, plan: Plan) -> Action:
    """The plan's next move in this state (the same rule in rehearsal and in play)."""
    power = state.power
    left = STEP_BUDGET - state.steps
    generation, demand = p.power_flows(state)
    # After the first district a brownout forfeits victory: keep what the rest needs.
    reserve = max(0, demand - generation) * left if state.districts else 0
    if state.research < plan.research:
        return _afford(Action("research"), p.COSTS["research"], power, reserve)
    for path in plan.taps:
        fresh = [c for c in path if c not in state.conduits]
        if fresh:
            return _afford(Action("conduit", path), p.COSTS["conduit"] * len(fresh), power, 0)
    for cell, direction in plan.vents:
        if (cell, direction) not in state.vents:
            return _afford(Action("vent", (cell,), direction=direction), p.COSTS["vent"], power, 0)
    for cell, material in plan.digs:
        if state.support_at(cell) != material:
            cost = p.support_cost(material)
            return _afford(Action("support", (cell,), material), cost, power, reserve)
        if cell not in state.chambers:
            return _afford(Action("excavate", (cell,)), p.COSTS["excavate"], power, reserve)
    pending = sum(1 for cell, _m in plan.sites if cell not in state.districts)
    field_now = p.flow_field(state.physics, state.base_flow, state.vents, state.steps)
    for cell, material in plan.sites:
        if cell in state.districts:
            continue
        if state.support_at(cell) != material:
            cost = p.support_cost(material)
            return _afford(Action("support", (cell,), material), cost, power, reserve)
        if cell not in state.chambers:
            still_cap = p.MATERIAL_SPECS[material][0]
            if state.stress_at(cell) <= still_cap:
                return _afford(Action("excavate", (cell,)), p.COSTS["excavate"], power, reserve)
            continue
        if state.steps >= plan.open_from and p.district_fault(state, cell, field_now) is None:
            # Opening a district raises demand: keep enough for every step left.
            after = max(0, demand + state.physics.district_draw - generation) * left
            if power - p.COSTS["district"] >= after or pending == 1:
                return _afford(Action("district", (cell,)), p.COSTS["district"], power, reserve)
    if pending == 0 and plan.extra and state.research < 10:
        spare = power - reserve - p.COSTS["research"]
        if spare >= 4:
            return Action("research")
    return WAIT


def _afford(action: Action, cost: int, power: int, reserve: int) -> Action:
    return action if power - cost >= reserve else WAIT


def rehearse(state: MegacityState, plan: Plan) -> tuple[bool, float]:
    """Play the plan to the end with the equations: (won, how close it came)."""
    while state.steps < STEP_BUDGET:
        out = rules.step(state, next_action(state, plan))
        state = out.state
        if out.terminated:
            return out.success, 100.0 if out.success else -100.0
        if state.breach:
            return False, -50.0 + len(state.districts)
    return False, len(state.districts) - len(state.offline) + state.integrity / 100


class MegacityPolicy(ScriptedPolicy):
    """The planner; `without` names capabilities it must do without ("vent", "relief",
    "tap", "research"), and `physics` is the world it plans for (a variant with a
    mechanism switched off), which is how the reference runs measure what each mechanism
    decides."""

    def __init__(
        self, context: Any, without: frozenset[str] = frozenset(), physics: Physics = PHYSICS
    ) -> None:
        super().__init__(context)
        self.without = without
        self.physics = physics
        self.plan: Plan | None = None
        self.expected: tuple[Any, ...] | None = None

    def choose(self, observation: dict[str, Any]) -> str:
        if observation["seams"] is None:
            return "scan"
        state = rebuild(observation, self.physics)
        if self.plan is None or dynamics(state) != self.expected:
            self.plan = self._replan(state)
        action = next_action(state, self.plan)
        self.expected = dynamics(rules.step(state, action).state)
        return action.command()

    def _replan(self, state: MegacityState) -> Plan:
        """The current plan if it still wins from here, else the first winning (or best)
        proposal."""
        best: tuple[float, Plan] | None = None
        tried = [self.plan] if self.plan is not None else []
        plain = itertools.islice(proposals(state, self.without), MAX_REHEARSALS)
        relieved = itertools.islice(relief_proposals(state, self.without), MAX_RELIEF_REHEARSALS)
        # Only when none of those wins: site sets whose lines need shafts both ways (a
        # weak current with sites at both ends of a line).
        wide = itertools.islice(proposals(state, self.without, wide=True), MAX_REHEARSALS)
        wide_relieved = itertools.islice(
            relief_proposals(state, self.without, wide=True), MAX_RELIEF_REHEARSALS
        )
        for plan in itertools.chain(tried, plain, relieved, wide, wide_relieved):
            won, score = rehearse(state, plan)
            if won:
                return plan
            if best is None or score > best[0]:
                best = (score, plan)
        if best is None:
            return Plan([], 0, [], [], STEP_BUDGET, extra=False)
        return best[1]
