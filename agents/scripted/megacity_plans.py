"""Megacity planner, part two: proposing plans worth rehearsing (`megacity.py` rehearses
them and plays the first that wins).

A plan is six sites with the column each needs, shafts across the prevailing current,
seam taps beside the sites, the step from which districts may open, and optionally a
relief dig on a seam cell for the load it takes off distant sites. `without` names
capabilities the planner must do without (the ablations that measure what its victories
need, `textenvs.agents.scripted.megacity_reference`): "vent", "relief" (relief digs),
"tap" (seam taps) or "research" (no research, so no mycelium or lodestone).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from textenvs.scenarios.megacity import physics as p
from textenvs.scenarios.megacity.state import (
    SIZE,
    TARGET_DISTRICTS,
    Cell,
    MegacityState,
    evolve,
    neighbours,
)

SAFE_FLOW = 4  # strength a site should keep in both airflow phases
WIDE_SHAFTS = 4  # shafts per line, both ways, when one way cannot serve a line
OPEN_FROM = (22, 28, 14, 32)  # steps from which districts may open, tried in this order


def rank(cell: Cell) -> tuple[int, int]:
    """Row-major order, as the state keeps its cells."""
    return cell[1], cell[0]


def _order(item: tuple[Cell, str]) -> tuple[int, int]:
    return rank(item[0])


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


MATERIAL_CHOICES = ("basalt", "mycelium", "lodestone")  # cheapest first
CANDIDATES = 16  # cells considered for the six sites


def material_choices(without: frozenset[str]) -> tuple[str, ...]:
    """The columns the planner may use: without research only the basic ones."""
    if "research" in without:
        return tuple(m for m in MATERIAL_CHOICES if m not in p.UNLOCK_AT)
    return MATERIAL_CHOICES


def _materials_for(state: MegacityState, cell: Cell, choices: tuple[str, ...]) -> list[str]:
    """The columns that hold the sideways pull at `cell` (None of them: no site)."""
    pull = p.pull_of(state.physics, state.seams, cell)
    return [m for m in choices if pull <= p.MATERIAL_SPECS[m][1]]


def _settled(state: MegacityState, steps: int = 16) -> dict[Cell, int]:
    """Each cell's lowest stress over some steps of seam flow (seam sites wait for it)."""
    stress = state.stress
    lowest = {(c, r): stress[r][c] for r in range(SIZE) for c in range(SIZE)}
    for _ in range(steps):
        stress = p.seam_flow(stress, state)
        for (c, r), value in lowest.items():
            lowest[(c, r)] = min(value, stress[r][c])
    return lowest


def _site_sets(
    state: MegacityState, without: frozenset[str], limit: int = 8
) -> list[list[tuple[Cell, str]]]:
    """The most promising six-site sets with their columns, best first. A site's load is
    judged with the neighbour loads and the seam relief that digging the others brings.
    Without shafts, only cells whose current already serves a district are sites."""
    settled = _settled(state)
    on_seam = p.seam_cells(state)
    choices = material_choices(without)
    options = {}
    for r in range(SIZE):
        for c in range(SIZE):
            cell = (c, r)
            materials = _materials_for(state, cell, choices)
            if "vent" in without and _worst_flow(state, cell, []) < SAFE_FLOW:
                continue
            if materials and (cell not in state.faults or cell in state.chambers):
                options[cell] = materials
    ranked = sorted(
        options, key=lambda c: settled[c] - max(p.MATERIAL_SPECS[m][0] for m in options[c])
    )
    fixed = [c for c in state.districts if c in options]
    free = [c for c in ranked if c not in fixed][:CANDIDATES]
    beside = {c: [n for n in neighbours(c) if n in options] for c in options}
    relief = {
        c: dict(p.relief_from(state.physics, state.seams, c)) for c in options if c in on_seam
    }
    # A cell no column holds even unloaded and relieved by every other candidate is in
    # no set: leaving it out gives the same sets, in the same order, much faster.
    pool = [*fixed, *free]
    best_relief = {c: sum(relief[s].get(c, 0) for s in pool if s in relief) for c in pool}
    caps = {c: [p.MATERIAL_SPECS[m][0] - 2 for m in options[c]] for c in pool}
    if any(settled[c] - best_relief[c] > max(caps[c]) for c in fixed):
        return []
    free = [c for c in free if settled[c] - best_relief[c] <= max(caps[c])]
    pool = [*fixed, *free]
    bit = {c: 1 << i for i, c in enumerate(pool)}
    near = {c: sum(bit[n] for n in beside[c] if n in bit) for c in pool}
    relieved_by = {
        c: [(bit[s], relief[s][c]) for s in pool if s in relief and relief[s].get(c)] for c in pool
    }
    neighbour_load = state.physics.excavate_neighbour_load
    scored = []
    for extra in itertools.combinations(free, TARGET_DISTRICTS - len(fixed)):
        chosen = (*fixed, *extra)
        mask = sum(bit[c] for c in chosen)
        total = 0.0
        picked = []
        for cell in chosen:
            crowd = (mask & near[cell]).bit_count()
            load = settled[cell] + neighbour_load * crowd
            load -= sum(amount for source, amount in relieved_by[cell] if mask & source)
            fits = (m for m, cap in zip(options[cell], caps[cell], strict=True) if load <= cap)
            material = next(fits, None)
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


def _vents(
    state: MegacityState, sites: list[Cell], most: int = 2, mixed: bool = False
) -> list[tuple[Cell, str]] | None:
    """Shafts across the prevailing current, the fewest per line (at most `most`, all in
    one direction) that keep every site on it at SAFE_FLOW in both phases; None when that
    is impossible. `mixed`: a line that no such set serves may also take shafts in both
    directions (a weak current with sites at both ends of a line needs them)."""
    vertical = sum(abs(dy) for row in state.base_flow for _dx, dy in row) >= sum(
        abs(dx) for row in state.base_flow for dx, _dy in row
    )
    directions = ("east", "west") if vertical else ("north", "south")
    lines: dict[int, list[Cell]] = {}
    for cell in sites:
        lines.setdefault(cell[1] if vertical else cell[0], []).append(cell)
    out: list[tuple[Cell, str]] = []
    for line, cells in sorted(lines.items()):
        at = [(s, line) if vertical else (line, s) for s in range(SIZE)]
        one_way = [
            [(at[s], direction) for s in starts]
            for direction in directions
            for count in range(most + 1)
            for starts in itertools.combinations(range(SIZE), count)
        ]
        options = _serving(state, cells, one_way)
        if not options and mixed:
            both_ways = [(cell, d) for d in directions for cell in at]
            options = _serving(state, cells, _subsets(both_ways, most))
        if not options:
            return None
        out.extend(min(options, key=lambda o: o[:2])[2])
    return out


def _subsets(shafts: list[tuple[Cell, str]], most: int) -> list[list[tuple[Cell, str]]]:
    return [list(c) for n in range(most + 1) for c in itertools.combinations(shafts, n)]


def _serving(
    state: MegacityState, cells: list[Cell], candidates: list[list[tuple[Cell, str]]]
) -> list[tuple[int, int, list[tuple[Cell, str]]]]:
    """(new shafts, shafts, the new ones) for each candidate set that keeps every cell
    at SAFE_FLOW in both phases."""
    options = []
    for shafts in candidates:
        if all(_worst_flow(state, cell, shafts) >= SAFE_FLOW for cell in cells):
            fresh = [v for v in shafts if v not in state.vents]
            options.append((len(fresh), len(shafts), fresh))
    return options


def _worst_flow(state: MegacityState, cell: Cell, shafts: list[tuple[Cell, str]]) -> int:
    """The weaker strength at `cell` over the two airflow phases with these shafts."""
    vents = tuple(dict.fromkeys((*state.vents, *shafts)))
    return min(
        p.strength(p.flow_field(state.physics, state.base_flow, vents, steps)[cell[1]][cell[0]])
        for steps in (0, state.physics.reversal_period)
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


MAX_DIG_EXCESS = 18  # integrity a relief dig may cost for good


def _site_vents(
    state: MegacityState, cells: list[Cell], without: frozenset[str], wide: bool
) -> list[tuple[Cell, str]] | None:
    """The shafts a site set gets: one way, at most two per line; or, `wide`, only for a
    set that fails that, up to WIDE_SHAFTS per line in both directions."""
    if "vent" in without:
        return _vents(state, cells, most=0)
    if not wide:
        return _vents(state, cells)
    if _vents(state, cells) is not None:
        return None  # proposed already by the narrow search
    return _vents(state, cells, most=WIDE_SHAFTS, mixed=True)


def proposals(
    state: MegacityState,
    without: frozenset[str] = frozenset(),
    digs: list[tuple[Cell, str]] | None = None,
    wide: bool = False,
) -> Iterator[Plan]:
    """Plans worth rehearsing, most promising first; `digs` are relief digs already
    assumed done in `state`. `wide`: the site sets whose shafts the narrow search could
    not place, with shafts both ways (the planner tries them only when nothing else
    wins)."""
    if wide and "vent" in without:
        return  # no shafts: nothing wider to try
    for sites in _site_sets(state, without):
        cells = [c for c, _m in sites]
        vents = _site_vents(state, cells, without, wide)
        if vents is None:
            continue
        materials = {m for _c, m in (*sites, *(digs or []))}
        research = 4 if "lodestone" in materials else 2 if "mycelium" in materials else 0
        research = max(research, min(state.research, 4))
        # Clear-of-pull sites first, seam sites last (they wait for the seam to drain).
        order = sorted(
            sites, key=lambda s: (p.pull_of(state.physics, state.seams, s[0]) > 0, rank(s[0]))
        )
        for taps in (0,) if state.conduits or "tap" in without else (2, 1):
            tapped = _taps(state, cells, taps)
            for open_from in OPEN_FROM:
                yield Plan(
                    order,
                    research,
                    tapped,
                    vents,
                    open_from,
                    list(digs or []),
                    extra="research" not in without,
                )


def relief_proposals(
    state: MegacityState, without: frozenset[str] = frozenset(), wide: bool = False
) -> Iterator[Plan]:
    """Plans that first dig one seam cell for the relief it brings to distant sites
    (load transfer), the column chosen to keep its own excess small."""
    if "relief" in without or (wide and "vent" in without):
        return
    settled = _settled(state)
    options = []
    for cell in sorted(p.seam_cells(state), key=rank):
        if cell in state.chambers:
            continue
        best = None
        for material in material_choices(without):
            still, side, brittle = p.MATERIAL_SPECS[material]
            pull = p.pull_of(state.physics, state.seams, cell)
            excess = max(0, settled[cell] - still) + max(0, pull - side) * brittle
            if best is None or excess < best[0]:
                best = (excess, material)
        if best is not None and best[0] <= MAX_DIG_EXCESS:
            relieved = sum(amount for _c, amount in p.relief_from(state.physics, state.seams, cell))
            options.append((best[0] - relieved / 20, cell, best[1]))
    for _score, cell, material in sorted(options):
        dug = evolve(
            state,
            stress=p.excavation_transfer(state, cell),
            chambers=(*state.chambers, cell),
            supports=(*state.supports, (cell, material)),
        )
        yield from itertools.islice(proposals(dug, without, [(cell, material)], wide), 12)
