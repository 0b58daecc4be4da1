"""Squad Recon rules: pure functions of (state, orders), no I/O and no text.

A step resolves in this order: (1) every order is read (orders for destroyed squads are
ignored and reported); (2) all moves at once, each against terrain and standing camps
only, so squads never block one another (they may share a cell); (3) the sensors of every
squad active at that moment sweep their 7x7 windows; (4) attacks: each camp that an
attack order targets fights every active squad orthogonally adjacent to it; (5) the end
conditions are checked.
"""

from __future__ import annotations

import numpy as np

from textenvs.core.env import Transition
from textenvs.scenarios.squad_recon import terrain
from textenvs.scenarios.squad_recon.state import (
    CAMP_STRENGTH,
    MOVES,
    REWARD_PER_CAMP,
    SQUAD_STRENGTH,
    SQUADS,
    STARTS,
    Camp,
    Cell,
    Order,
    Orders,
    ReconState,
    Squad,
    StepEvent,
    Terrain,
)


def initial_state(rng: np.random.Generator) -> ReconState:
    grid, camp_cells, _attempts = terrain.generate(rng)
    camps = tuple(
        Camp(cell, int(rng.integers(CAMP_STRENGTH[0], CAMP_STRENGTH[1] + 1))) for cell in camp_cells
    )
    squads = tuple(
        Squad(name, start, int(rng.integers(SQUAD_STRENGTH[0], SQUAD_STRENGTH[1] + 1)))
        for name, start in zip(SQUADS, STARTS, strict=True)
    )
    state = ReconState(terrain=grid, squads=squads, camps=camps, seen=frozenset())
    return ReconState(
        terrain=grid, squads=squads, camps=camps, seen=sweep(state, squads), report_step=-1
    )


def sweep(state: ReconState, squads: tuple[Squad, ...]) -> frozenset[Cell]:
    """`state.seen` plus what every active squad in `squads` sees now."""
    # Mostly nothing new comes into view: keep the same frozenset then (render memoises
    # the fogged map on its identity) instead of copying it.
    seen = state.seen
    for squad in squads:
        if squad.active:
            sight = _sight(state, squad.position)
            if not sight <= seen:
                seen = seen | sight
    return frozenset(seen)


# What a squad sees from a cell depends only on the terrain, which never changes within
# an episode, and squads sweep from the same cells again and again: remember the answers
# for the terrain in play, with its forest cells as a set (a cheap membership test). The
# memo is keyed by the terrain object's identity (it holds a reference, so the identity
# stays valid) and swapped whole, never half-updated.
_sight_memo: tuple[object, frozenset[Cell], dict[Cell, frozenset[Cell]]] = (None, frozenset(), {})


def _sight(state: ReconState, origin: Cell) -> frozenset[Cell]:
    global _sight_memo
    grid, forest, by_origin = _sight_memo
    if grid is not state.terrain:
        forest = frozenset(
            (x, y)
            for y, row in enumerate(state.terrain)
            for x, kind in enumerate(row)
            if kind is Terrain.FOREST
        )
        by_origin = {}
        _sight_memo = (state.terrain, forest, by_origin)
    seen = by_origin.get(origin)
    if seen is None:
        seen = terrain.visible_cells(forest.__contains__, origin)
        by_origin[origin] = seen
    return seen


def adjacent(a: Cell, b: Cell) -> bool:
    """Orthogonal neighbours (one move apart)."""
    return abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1


def _move(state: ReconState, squad: Squad, order: Order) -> tuple[Squad, StepEvent]:
    dx, dy = MOVES[order]
    target = (squad.position[0] + dx, squad.position[1] + dy)
    if not terrain.inside(target):
        reason = "edge"
    elif state.at(target) is not Terrain.OPEN:
        reason = state.at(target).value
    elif state.standing_camp_at(target) is not None:
        reason = "camp"
    else:
        moved = Squad(squad.name, target, squad.strength, True)
        return moved, StepEvent("move", (squad.name,), target, direction=order.value)
    event = StepEvent(
        "blocked", (squad.name,), squad.position, direction=order.value, reason=reason
    )
    return squad, event


def step(state: ReconState, orders: Orders, step_index: int) -> Transition[ReconState]:
    events: list[StepEvent] = []
    plan: dict[str, Order] = {}
    for squad in state.squads:
        order = orders.order_for(squad.name)
        if not squad.active:
            if order is not None and orders.everyone is None:
                events.append(StepEvent("order_ignored", (squad.name,), reason="destroyed"))
            continue
        plan[squad.name] = order or Order.HOLD

    # (2) moves, all at once: only terrain and standing camps block, never other squads.
    squads: list[Squad] = []
    for squad in state.squads:
        order = plan.get(squad.name)
        if order in MOVES:
            squad, event = _move(state, squad, order)
            events.append(event)
        elif order is Order.HOLD:
            events.append(StepEvent("hold", (squad.name,), squad.position))
        squads.append(squad)

    # (3) sensors: a camp becomes known (with its strength) once its cell is seen.
    seen = sweep(state, tuple(squads))
    for camp in state.camps:
        if camp.standing and camp.position in seen and camp.position not in state.seen:
            events.append(
                StepEvent("camp_sighted", cell=camp.position, camp_strength=camp.strength)
            )

    # (4) attacks: every active squad adjacent to the targeted camp takes part.
    camps = list(state.camps)
    reward = 0.0
    targets: list[int] = []
    for squad in squads:
        if plan.get(squad.name) is not Order.ATTACK:
            continue
        hit = [
            i for i, c in enumerate(camps) if c.standing and adjacent(c.position, squad.position)
        ]
        if not hit:
            events.append(StepEvent("attack_no_target", (squad.name,), squad.position))
        elif hit[0] not in targets:
            targets.append(hit[0])
    for index in sorted(targets):
        camp = camps[index]
        party = [s for s in squads if s.active and adjacent(s.position, camp.position)]
        total = sum(s.strength for s in party)
        names = tuple(s.name for s in party)
        if total > camp.strength:
            camps[index] = Camp(camp.position, camp.strength, standing=False)
            reward += REWARD_PER_CAMP
            kind = "camp_eliminated"
        else:
            squads = [
                Squad(s.name, s.position, s.strength, False) if s in party else s for s in squads
            ]
            kind = "attack_failed"
        events.append(
            StepEvent(kind, names, camp.position, strength=total, camp_strength=camp.strength)
        )

    # (5) end conditions.
    won = all(not c.standing for c in camps)
    wiped = not any(s.active for s in squads)
    if won:
        events.append(StepEvent("mission_complete"))
    elif wiped:
        events.append(StepEvent("all_squads_destroyed"))
    new = ReconState(
        terrain=state.terrain,
        squads=tuple(squads),
        camps=tuple(camps),
        seen=seen,
        last_events=tuple(events),
        report_step=step_index + 1,
    )
    return Transition(
        new,
        reward=reward,
        terminated=won or wiped,
        success=won,
        events=tuple(e.as_dict() for e in events),
    )
