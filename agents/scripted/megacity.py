"""Megacity planner: an engineer who knows the equations (all of which research reveals)
but reads only the observation.

1. `scan` to chart the seams and faults; from then on the observation shows the whole
   world, so the planner rebuilds it (`rebuild`) every turn.
2. Propose plans: six sites (the few cells clear of sideways pull take basalt, cells on or
   beside a seam take mycelium or lodestone, which research unlocks), shafts across the
   prevailing current so each site keeps its strength through reversals, one or two
   seam taps placed to feed the sites, and the step from which districts may open.
3. Rehearse each plan with the equations on the rebuilt world and follow the first one
   that wins. Each turn it checks the world is where the rehearsal said; if not (say a
   reply was lost) it plans again from there.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from textenvs.agents.scripted import ScriptedPolicy
from textenvs.scenarios.megacity import physics as p
from textenvs.scenarios.megacity import rules
from textenvs.scenarios.megacity.state import (
    COLS,
    SIZE,
    STEP_BUDGET,
    TARGET_DISTRICTS,
    Action,
    Cell,
    MegacityState,
    Seam,
    evolve,
    neighbours,
)

WAIT = Action("wait")
SAFE_FLOW = 4  # strength a site should keep in both airflow phases
OPEN_FROM = (22, 28, 14, 32)  # steps from which districts may open, tried in this order
MAX_REHEARSALS = 24


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


def rebuild(obs: dict[str, Any]) -> MegacityState:
    """The world as the (scanned) observation shows it. The base airflow is the shown
    field less the shafts, with the reversal undone."""
    vents = tuple((parse_cell(v.split()[0]), v.split()[1]) for v in obs["vents"])
    shown = {c: parse_flow(v) for c, v in north_first(obs["airflow"]).items()}
    for (c, r), (vx, vy) in p.vent_cells(vents):
        dx, dy = shown[(c, r)]
        shown[(c, r)] = (dx - vx * p.VENT_MAG, dy - vy * p.VENT_MAG)
    sign = p.phase_sign(obs["step"])
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
        chambers=tuple(c for c in order if sites[c].rstrip("+") != "."),
        supports=tuple(
            sorted(((parse_cell(k), m) for k, m in obs["supports"].items()), key=_order)
        ),
        districts=tuple(sorted((parse_cell(d) for d in obs["district_cells"]), key=_rank)),
        vents=vents,
        conduits=tuple(sorted((parse_cell(c) for c in obs["conduits"]), key=_rank)),
        integrity=obs["integrity"],
        air=obs["air"],
        power=obs["power"],
        brownout=obs["brownout"],
        steps=obs["step"],
        research=obs["research_points"],
        scanned=True,
        breach=obs["breach"] or "",
    )


def _rank(cell: Cell) -> tuple[int, int]:
    return cell[1], cell[0]


def _order(item: tuple[Cell, str]) -> tuple[int, int]:
    return _rank(item[0])


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


@dataclass
class Plan:
    sites: list[tuple[Cell, str]]  # build order, material
    research: int  # research points wanted before building
    taps: list[tuple[Cell, ...]]
    vents: list[tuple[Cell, str]]
    open_from: int  # first step at which a district may open
    #: seam cells dug (and propped) only for the relief they bring to other sites
    digs: list[tuple[Cell, str]] = field(default_factory=list)
    extra: bool = True  # research further with spare power at the end


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
    field_now = p.flow_field(state.base_flow, state.vents, state.steps)
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
            after = max(0, demand + p.DISTRICT_DRAW - generation) * left
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


# ----- proposing plans -----------------------------------------------------------------


MATERIAL_CHOICES = ("basalt", "mycelium", "lodestone")  # cheapest first
CANDIDATES = 16  # cells considered for the six sites


def _materials_for(state: MegacityState, cell: Cell) -> list[str]:
    """The columns that hold the sideways pull at `cell` (None of them: no site)."""
    pull = p.pull_of(state.seams, cell)
    return [m for m in MATERIAL_CHOICES if pull <= p.MATERIAL_SPECS[m][1]]


def _settled(state: MegacityState, steps: int = 16) -> dict[Cell, int]:
    """Each cell's lowest stress over some steps of seam flow (seam sites wait for it)."""
    stress = state.stress
    lowest = {(c, r): stress[r][c] for r in range(SIZE) for c in range(SIZE)}
    for _ in range(steps):
        stress = p.seam_flow(stress, state)
        for (c, r), value in lowest.items():
            lowest[(c, r)] = min(value, stress[r][c])
    return lowest


def _site_sets(state: MegacityState, limit: int = 8) -> list[list[tuple[Cell, str]]]:
    """The most promising six-site sets with their columns, best first. A site's load is
    judged with the neighbour loads and the seam relief that digging the others brings."""
    settled = _settled(state)
    on_seam = p.seam_cells(state)
    options = {}
    for r in range(SIZE):
        for c in range(SIZE):
            cell = (c, r)
            materials = _materials_for(state, cell)
            if materials and (cell not in state.faults or cell in state.chambers):
                options[cell] = materials
    ranked = sorted(
        options, key=lambda c: settled[c] - max(p.MATERIAL_SPECS[m][0] for m in options[c])
    )
    fixed = [c for c in state.districts if c in options]
    free = [c for c in ranked if c not in fixed][:CANDIDATES]
    beside = {c: [n for n in neighbours(c) if n in options] for c in options}
    relief = {c: dict(p.relief_from(state.seams, c)) for c in options if c in on_seam}
    scored = []
    for extra in itertools.combinations(free, TARGET_DISTRICTS - len(fixed)):
        chosen = (*fixed, *extra)
        sources = [relief[c] for c in chosen if c in relief]
        total = 0.0
        picked = []
        for cell in chosen:
            crowd = sum(n in chosen for n in beside[cell])
            load = settled[cell] + p.EXCAVATE_NEIGHBOUR_LOAD * crowd
            load -= sum(source.get(cell, 0) for source in sources)
            material = next((m for m in options[cell] if load <= p.MATERIAL_SPECS[m][0] - 2), None)
            if material is None:
                break
            picked.append((cell, material))
            room = p.MATERIAL_SPECS[material][0] - load
            total += min(room, 15) / 5 - 2 * crowd - 2 * (material == "lodestone")
            total -= 3 * (cell in on_seam)
        else:
            scored.append((total, sorted(picked, key=_order)))
    scored.sort(key=lambda item: -item[0])
    return [sites for _s, sites in scored[:limit]]


def _vents(state: MegacityState, sites: list[Cell]) -> list[tuple[Cell, str]] | None:
    """Shafts across the prevailing current, the fewest per line (at most two) that keep
    every site on it at SAFE_FLOW in both phases; None when that is impossible."""
    vertical = sum(abs(dy) for row in state.base_flow for _dx, dy in row) >= sum(
        abs(dx) for row in state.base_flow for dx, _dy in row
    )
    lines: dict[int, list[Cell]] = {}
    for cell in sites:
        lines.setdefault(cell[1] if vertical else cell[0], []).append(cell)
    out: list[tuple[Cell, str]] = []
    for line, cells in sorted(lines.items()):
        options = []
        for direction in ("east", "west") if vertical else ("north", "south"):
            for count in range(3):
                for starts in itertools.combinations(range(SIZE), count):
                    shafts = [((s, line) if vertical else (line, s), direction) for s in starts]
                    if all(_worst_flow(state, cell, shafts) >= SAFE_FLOW for cell in cells):
                        fresh = [v for v in shafts if v not in state.vents]
                        options.append((len(fresh), count, fresh))
        if not options:
            return None
        out.extend(min(options, key=lambda o: o[:2])[2])
    return out


def _worst_flow(state: MegacityState, cell: Cell, shafts: list[tuple[Cell, str]]) -> int:
    """The weaker strength at `cell` over the two airflow phases with these shafts."""
    vents = tuple(dict.fromkeys((*state.vents, *shafts)))
    return min(
        p.strength(p.flow_field(state.base_flow, vents, steps)[cell[1]][cell[0]])
        for steps in (0, p.REVERSAL_PERIOD)
    )


def _taps(state: MegacityState, sites: list[Cell], count: int) -> list[tuple[Cell, ...]]:
    """`count` three-cell seam segments off the sites, nearest the sites first."""
    near = {n for s in sites for n in (*neighbours(s), s)}
    taken = set(state.conduits)
    options = []
    for seam in state.seams:
        for i in range(SIZE - 2):
            path = seam.cells[i : i + 3]
            if set(path) & set(sites):
                continue
            options.append((sum(c in near for c in path), -i, path))
    options.sort(reverse=True)
    out: list[tuple[Cell, ...]] = []
    for _n, _i, path in options:
        if len(out) == count:
            break
        if not set(path) & taken:
            out.append(path)
            taken.update(path)
    return out


MAX_DIG_EXCESS = 10  # integrity a relief dig may cost for good


def proposals(state: MegacityState, digs: list[tuple[Cell, str]] | None = None) -> Iterator[Plan]:
    """Plans worth rehearsing, most promising first; `digs` are relief digs already
    assumed done in `state`."""
    for sites in _site_sets(state):
        cells = [c for c, _m in sites]
        vents = _vents(state, cells)
        if vents is None:
            continue
        materials = {m for _c, m in (*sites, *(digs or []))}
        research = 4 if "lodestone" in materials else 2 if "mycelium" in materials else 0
        research = max(research, min(state.research, 4))
        # Clear-of-pull sites first, seam sites last (they wait for the seam to drain).
        order = sorted(sites, key=lambda s: (p.pull_of(state.seams, s[0]) > 0, _rank(s[0])))
        for taps in (0,) if state.conduits else (2, 1):
            tapped = _taps(state, cells, taps)
            for open_from in OPEN_FROM:
                yield Plan(order, research, tapped, vents, open_from, list(digs or []))


def relief_proposals(state: MegacityState) -> Iterator[Plan]:
    """Plans that first dig one seam cell for the relief it brings to distant sites
    (load transfer), the column chosen to keep its own excess small."""
    settled = _settled(state)
    options = []
    for cell in sorted(p.seam_cells(state), key=_rank):
        if cell in state.chambers:
            continue
        best = None
        for material in MATERIAL_CHOICES:
            still, side, brittle = p.MATERIAL_SPECS[material]
            pull = p.pull_of(state.seams, cell)
            excess = max(0, settled[cell] - still) + max(0, pull - side) * brittle
            if best is None or excess < best[0]:
                best = (excess, material)
        if best is not None and best[0] <= MAX_DIG_EXCESS:
            relieved = sum(amount for _c, amount in p.relief_from(state.seams, cell))
            options.append((best[0] - relieved / 20, cell, best[1]))
    for _score, cell, material in sorted(options):
        dug = evolve(
            state,
            stress=p.excavation_transfer(state, cell),
            chambers=(*state.chambers, cell),
            supports=(*state.supports, (cell, material)),
        )
        yield from itertools.islice(proposals(dug, [(cell, material)]), 8)


class MegacityPolicy(ScriptedPolicy):
    def __init__(self, context: Any) -> None:
        super().__init__(context)
        self.plan: Plan | None = None
        self.expected: tuple[Any, ...] | None = None

    def choose(self, observation: dict[str, Any]) -> str:
        if observation["seams"] is None:
            return "scan"
        state = rebuild(observation)
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
        plain = itertools.islice(proposals(state), MAX_REHEARSALS)
        relieved = itertools.islice(relief_proposals(state), MAX_REHEARSALS)
        for plan in itertools.chain(tried, plain, relieved):
            won, score = rehearse(state, plan)
            if won:
                return plan
            if best is None or score > best[0]:
                best = (score, plan)
        if best is None:
            return Plan([], 0, [], [], STEP_BUDGET, extra=False)
        return best[1]
