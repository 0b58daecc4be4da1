"""Megacity: every equation the research texts (and the rules text) state, checked against
the physics. Each test reads its numbers from the text an agent is shown, computes what
that text predicts, steps a state and compares: if text and code drift apart, it fails."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest

import textenvs
from textenvs.agents.scripted.megacity import parse_flow
from textenvs.prompts import rules_text
from textenvs.scenarios.megacity import maps, render, research, rules
from textenvs.scenarios.megacity.parse import parse
from textenvs.scenarios.megacity.state import (
    AIR_THRESHOLD,
    COLS,
    DIRECTIONS,
    INTEGRITY_THRESHOLD,
    SIZE,
    START_AIR,
    START_INTEGRITY,
    START_POWER,
    Action,
    Cell,
    Grid,
    MegacityState,
    all_cells,
    cell_name,
    neighbours,
)

WAIT = Action("wait")
WORLDS = [(seed, level) for seed in range(4) for level in maps.LEVELS]


def equation(rule: str) -> str:
    """The text research reveals once `rule` is decoded."""
    return next(text for name, _clue, text in research.RULES if name == rule)


def numbers(pattern: str, text: str) -> list[int]:
    """The integers `pattern`'s groups capture in `text` (which must match)."""
    found = re.search(pattern, text)
    assert found, f"the text no longer says {pattern!r}: {text}"
    return [int(group) for group in found.groups()]


def world(seed: int, level: int, **changes: object) -> MegacityState:
    return replace(maps.initial_state(np.random.default_rng(seed), level), **changes)


def at(grid: Grid, cell: Cell) -> int:
    return grid[cell[1]][cell[0]]


def shown(state: MegacityState) -> dict:
    return render.observe(state, state.steps)


# ----- the texts' equations, written from the texts ----------------------------------------

SEAM_FLOW = r"Each step, row seam first, every seam cell but the last passes floor\((\d+)% of its stress; (\d+)% with a conduit on it\) to the next cell, all at once; each seam cell ends at min\((\d+), stress \+ received\) - passed\."  # noqa: E501
PULL = r"per seam, (\d+) if it runs through the cell, else (\d+) if through a neighbour; x(\d+) with a conduit on the cell"  # noqa: E501
TRANSFER = r"adds (\d+) stress to each orthogonal neighbour \((\d+) if the dug cell is a fault; max (\d+)\)\. Along each seam through it, cells (\d+)\+ steps away lose (\d+) and the cells beside those, off that seam, lose (\d+) \(min (\d+)\)"  # noqa: E501


def shown_equation(rule: str) -> str:
    """`rule`'s text as the agent reads it in the observation once research decodes it."""
    text = render.render(shown(world(0, 2, research=research.TOTAL_POINTS)))
    found = re.search(rf"^- {re.escape(rule)} \[decoded\]: (.*)$", text, re.MULTILINE)
    assert found, text
    return found.group(1)


def sentence_seam_flow(stress: Grid, seams: list[tuple[Cell, ...]], conduits: set[Cell]) -> Grid:
    """'Each step, row seam first, every seam cell but the last passes floor(12% of its
    stress; 24% with a conduit on it) to the next cell, all at once; each seam cell ends at
    min(100, stress + received) - passed.' `seams` run upstream to downstream."""
    pct, tapped_pct, top = numbers(SEAM_FLOW, shown_equation("Sideways gravity"))
    grid = [list(row) for row in stress]
    for cells in sorted(seams, key=lambda cells: cells[0][1] != cells[1][1]):  # rows first
        before = [grid[r][c] for c, r in cells]  # all at once: from the stress before
        passed = [
            value * (tapped_pct if cell in conduits else pct) // 100
            for value, cell in zip(before[:-1], cells[:-1], strict=True)
        ] + [0]
        received = [0, *passed[:-1]]
        for (c, r), value, got, gave in zip(cells, before, received, passed, strict=True):
            grid[r][c] = min(top, value + got) - gave
    return tuple(map(tuple, grid))


def text_seam_flow(stress: Grid, state: MegacityState) -> Grid:
    """The research sentence on `state`'s seams and conduits."""
    return sentence_seam_flow(stress, [s.cells for s in state.seams], set(state.conduits))


def text_pull(state: MegacityState, cell: Cell) -> int:
    on, beside, gain = numbers(PULL, equation("Sideways gravity"))
    total = 0
    for seam in state.seams:
        if cell in seam.cells:
            total += on
        elif set(neighbours(cell)) & set(seam.cells):
            total += beside
    return total * (gain if cell in state.conduits else 1)


def text_materials() -> dict[str, tuple[int, int, int]]:
    """'bare 30/0/x1, timber 55/0/x1, ...': still cap, sideways cap, brittleness."""
    found = re.findall(r"(\w+) (\d+)/(\d+)/x(\d+)", equation("Support materials"))
    assert found
    return {name: (int(still), int(side), int(brittle)) for name, still, side, brittle in found}


def text_excavation(state: MegacityState, dug: Cell) -> Grid:
    load, fault_load, top, far, relief, flank, bottom = numbers(TRANSFER, equation("Load transfer"))
    grid = [list(row) for row in state.stress]
    for c, r in neighbours(dug):
        grid[r][c] = min(top, grid[r][c] + (fault_load if dug in state.faults else load))
    for seam in state.seams:
        if dug not in seam.cells:
            continue
        at_ = seam.cells.index(dug)
        for i, (c, r) in enumerate(seam.cells):
            if abs(i - at_) < far:
                continue
            grid[r][c] = max(bottom, grid[r][c] - relief)
            for x, y in neighbours((c, r)):
                if (x, y) not in seam.cells:
                    grid[y][x] = max(bottom, grid[y][x] - flank)
    return tuple(map(tuple, grid))


# ----- one test per equation ---------------------------------------------------------------


@pytest.mark.parametrize(("seed", "level"), WORLDS)
def test_seam_flow_is_what_the_text_says(seed: int, level: int) -> None:
    state = world(seed, level)
    tapped = replace(state, conduits=(state.seams[0].cells[1], state.seams[1].cells[2]))
    for before in (state, tapped):
        after = rules.step(before, WAIT).state
        assert after.stress == text_seam_flow(before.stress, before)


def test_seam_flow_caps_the_last_cell_at_the_stated_maximum() -> None:
    state = world(0, 3)
    last = state.seams[0].cells[-1]
    full = replace(state, stress=tuple(tuple(100 for _ in range(SIZE)) for _ in range(SIZE)))
    after = rules.step(full, WAIT).state
    assert at(after.stress, last) == 100 and after.stress == text_seam_flow(full.stress, full)


def rendered_stress(text: str) -> Grid:
    """The stress map as the agent reads it, stored south row first like the state."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("Rock stress")) + 2
    rows = [line.split() for line in lines[top : top + SIZE]]
    assert [row[0] for row in rows] == [str(r) for r in range(SIZE, 0, -1)], rows
    return tuple(tuple(int(value) for value in row[1:]) for row in reversed(rows))


def named(name: str) -> Cell:
    return COLS.index(name[0]), int(name[1:]) - 1


def rendered_seams(text: str) -> list[tuple[Cell, ...]]:
    """'Seams: row 2 pulling east; column D pulling north.': cells upstream first."""
    found = re.search(r"Seams: (.*?)\. Faults", text)
    assert found, text
    seams = []
    for part in found.group(1).split("; "):
        seam = re.fullmatch(r"(row|column) (\w) pulling (\w+)", part)
        assert seam, part
        kind, line, direction = seam.groups()
        if kind == "row":
            cells = [(c, int(line) - 1) for c in range(SIZE)]
        else:
            cells = [(COLS.index(line), r) for r in range(SIZE)]
        seams.append(tuple(cells[::-1] if direction in ("west", "south") else cells))
    return seams


def rendered_conduits(text: str) -> set[Cell]:
    found = re.search(r"^Conduits:\s+(.*)$", text, re.MULTILINE)
    assert found, text
    return set() if found.group(1) == "none" else set(map(named, found.group(1).split()))


def test_a_conduit_rounds_once_at_the_doubled_share() -> None:
    """'floor(12% of its stress; 24% with a conduit on it)': one floor of 24%, not twice
    the floor of 12%; at 96 the two readings differ (23 against 22)."""
    pct, tapped_pct, _top = numbers(SEAM_FLOW, shown_equation("Sideways gravity"))
    full = tuple(tuple(96 for _ in range(SIZE)) for _ in range(SIZE))
    for seed, level in WORLDS:
        state = world(seed, level, stress=full)
        first = state.seams[0].cells[0]  # a row seam's first cell: on no other seam
        tapped = replace(state, conduits=(first,))
        after = rendered_stress(render.render(shown(rules.step(tapped, WAIT).state)))
        assert at(after, first) == 96 - 96 * tapped_pct // 100 == 73
        assert at(after, first) != 96 - 2 * (96 * pct // 100)
        assert after == text_seam_flow(full, tapped)


def test_every_receiving_seam_cell_is_capped_before_it_passes_its_share() -> None:
    """'each seam cell ends at min(100, stress + received) - passed': a cell at 95 that
    takes 11 and passes 11 ends at 89, not at 95 (the cap is not only the last cell's)."""
    full = tuple(tuple(95 for _ in range(SIZE)) for _ in range(SIZE))
    state = world(0, 3, stress=full)
    after = rendered_stress(render.render(shown(rules.step(state, WAIT).state)))
    assert after == text_seam_flow(full, state)
    plain = next(c for c in state.seams[0].cells[1:-1] if c not in state.seams[1].cells)
    assert at(after, plain) == 89


def test_seed_11_level_3_reads_as_the_sentence_says_from_step_0() -> None:
    """The issue's replay, read only from the text the agent sees: the map before `scan`
    is the stress the step acts on (the rules text says so), and at step 1 B2, C2, D3 and
    D4 read 89 (each took and passed 11 from 95, capped at 100 between); with a conduit
    on B2 C2 D2 from step 4, D3 reads 90 (89 + 11 or more from the tapped D2, capped at
    100, - 10)."""
    rules_said = " ".join(rules_text("megacity").split())
    assert "the stress map (0-100: each cell's actual stress, before any scan too)" in rules_said
    env = textenvs.make("megacity")
    text, _info = env.reset(seed=11, options={"level": 3})
    assert "Geology: not charted yet" in text
    texts = [text]
    for command in ["scan", "wait", "wait", "conduit B2 C2 D2", "wait", "wait", "wait", "wait"]:
        texts.append(env.step(command)[0])
    seams = rendered_seams(texts[1])
    row, column = ((c, 1) for c in range(SIZE)), ((3, r) for r in range(SIZE))
    assert seams == [tuple(row), tuple(column)]  # row 2 pulling east, column D north
    maps_ = [rendered_stress(t) for t in texts]
    for step in range(1, len(texts)):
        conduits = rendered_conduits(texts[step])  # laid by this step's action, before the tick
        assert all(any(c in cells for cells in seams) for c in conduits)  # no damping
        assert maps_[step] == sentence_seam_flow(maps_[step - 1], seams, conduits), step
    assert [at(maps_[0], named(n)) for n in ("B2", "C2", "D3", "D4")] == [92, 95, 95, 95]
    assert [at(maps_[1], named(n)) for n in ("B2", "C2", "D3", "D4")] == [89] * 4
    assert [at(maps_[step], named("D3")) for step in range(4, 9)] == [90] * 5


def test_a_conduit_costs_what_the_components_line_says_per_new_cell() -> None:
    """'conduit, 2 per new cell': a 3-cell conduit costs 6, extending it by one cell 2, and
    re-laying it nothing (refused). The cost is read back from the shown power change:
    change = generation - draw - cost."""
    assert "paid per cell without one yet" in " ".join(rules_text("megacity").split())
    state = world(0, 2)
    (cost,) = numbers(r"(?m)^- conduit, (\d+) per new cell: ", render.render(shown(state)))
    power = r"last step ([+-]\d+) with costs; generation (\d+), draw (\d+) a step"
    path = state.seams[0].cells
    for cells, new in ((path[:3], 3), (path[1:4], 1), (path[1:4], 0)):
        state = rules.step(state, Action("conduit", cells)).state
        change, generation, draw = numbers(power, render.render(shown(state)))
        assert generation - draw - change == new * cost
    assert "already carry conduits" in state.report[0]


@pytest.mark.parametrize(("seed", "level"), WORLDS[:4])
def test_sideways_load_per_seam_is_what_the_text_says(seed: int, level: int) -> None:
    """A timber column in unloaded rock: the integrity lost is its sideways excess."""
    _still, side, brittle = text_materials()["timber"]
    calm = tuple(tuple(0 for _ in range(SIZE)) for _ in range(SIZE))
    for cell in all_cells():
        for conduits in ((), (cell,)):
            state = world(seed, level, stress=calm, conduits=conduits, chambers=(cell,))
            state = replace(state, supports=((cell, "timber"),))
            excess = max(0, text_pull(state, cell) - side) * brittle
            assert rules.step(state, WAIT).state.integrity == 100 - excess


def test_excess_and_integrity_are_what_the_text_says() -> None:
    text = equation("Support materials")
    assert "integrity = 100 - the chambers' total excess (min 0)" in text
    state = world(1, 2)
    seen = set()
    for material, (still, side, brittle) in text_materials().items():
        cells = sorted({(1, 1), (2, 2), state.seams[0].cells[2], (0, 4)})
        supports = () if material == "bare" else tuple((c, material) for c in cells)
        built = replace(state, chambers=tuple(cells), supports=supports, research=10)
        after = rules.step(built, WAIT).state
        excess = sum(
            max(0, at(after.stress, c) - still) + max(0, text_pull(built, c) - side) * brittle
            for c in cells
        )
        assert after.integrity == max(0, 100 - excess), material
        seen.add(after.integrity > 0)
    assert seen == {True, False}  # the floor at 0 was reached, and not by every material
    (unlock,) = numbers(r"Lodestone unlocks at (\d+) points", text)
    early = rules.step(replace(state, research=unlock - 1), parse("support C3 lodestone"))
    assert "locked" in early.state.report[0]
    assert rules.step(replace(state, research=unlock), parse("support C3 lodestone")).state.supports


@pytest.mark.parametrize(("seed", "level"), WORLDS)
def test_load_transfer_is_what_the_text_says(seed: int, level: int) -> None:
    """Every cell dug: the text's transfer, then the step's seam flow."""
    state = world(seed, level, power=100)
    for cell in all_cells():
        after = rules.step(state, Action("excavate", (cell,))).state
        dug = replace(state, stress=text_excavation(state, cell))
        assert after.stress == text_seam_flow(dug.stress, dug), cell_name(cell)


def test_conduit_damping_is_what_the_text_says() -> None:
    text = equation("Power and conduits")
    (damp,) = numbers(r"off the seams removes (\d+) stress from it once \(min 0\)", text)
    state = world(2, 2)
    off = next(c for c in all_cells() if all(c not in s.cells for s in state.seams))
    laid = rules.step(state, Action("conduit", (off,))).state
    assert at(laid.stress, off) == max(0, at(state.stress, off) - damp)
    assert at(rules.step(laid, WAIT).state.stress, off) == at(laid.stress, off)  # once
    low = replace(state, stress=tuple(tuple(2 for _ in range(SIZE)) for _ in range(SIZE)))
    assert at(rules.step(low, Action("conduit", (off,))).state.stress, off) == 0


def test_the_field_is_reversed_at_exactly_the_steps_the_text_names() -> None:
    text = equation("Airflow")
    spans = re.search(r"reversed at steps ([\d\-, ]+) and (\d+) \(the step shown\)", text)
    assert spans, text
    named = {int(spans.group(2))}
    for span in spans.group(1).split(", "):
        low, high = map(int, span.split("-"))
        named |= set(range(low, high + 1))
    env = textenvs.make("megacity")
    _text, info = env.reset(seed=5)
    seen = [info["observation"]]
    while not env.done:
        *_rest, info = env.step("wait")
        seen.append(info["observation"])
    assert [o["step"] for o in seen] == list(range(41))
    flipped = {o["step"] for o in seen if o["airflow"] != seen[0]["airflow"]}
    assert flipped == named


def test_a_shaft_adds_what_the_text_says_from_its_start_to_the_edge() -> None:
    text = equation("Airflow")
    (mag,) = numbers(r"A shaft adds (\d+) along its direction to each cell from its start", text)
    state = world(3, 0)
    for direction, (vx, vy) in DIRECTIONS.items():
        dug = rules.step(state, Action("vent", ((2, 2),), direction=direction)).state
        plain, shafted = (shown(s)["airflow"] for s in (rules.step(state, WAIT).state, dug))
        for c, r in all_cells():
            crossed = (c, r) == (2, 2) or (
                ((c - 2) * vx > 0 and r == 2) or ((r - 2) * vy > 0 and c == 2)
            )
            dx, dy = parse_flow(plain[SIZE - 1 - r][c])
            expect = (dx + vx * mag, dy + vy * mag) if crossed else (dx, dy)
            assert parse_flow(shafted[SIZE - 1 - r][c]) == expect, (direction, (c, r))


AIR = r"a district runs at >= (\d+)\. Air target = (\d+) \+ sum over all districts of (\d+) x \(min\(strength, (\d+)\) - (\d+)\), within 0-100; air moves toward it by at most (\d+) per step"  # noqa: E501


SITES = [(0, 4), (4, 4), (0, 0), (4, 0), (1, 3), (3, 1)]


def open_world(**changes: object) -> MegacityState:
    """No seams and unloaded rock: every column holds, only the airflow decides."""
    calm = tuple(tuple(0 for _ in range(SIZE)) for _ in range(SIZE))
    return world(0, 1, seams=(), stress=calm, **changes)


@pytest.mark.parametrize("count", [1, 6])
@pytest.mark.parametrize("strength", range(8))
def test_the_air_target_and_district_airflow_are_what_the_text_says(
    strength: int, count: int
) -> None:
    """Districts (offline ones too) at one airflow strength: the target shown, the air's
    move toward it, and which districts run."""
    least, base, per, cap, demand, rate = numbers(AIR, equation("Airflow"))
    cells = SITES[:count]
    state = open_world(
        base_flow=tuple(tuple((strength, 0) for _ in range(SIZE)) for _ in range(SIZE)),
        chambers=tuple(cells),
        supports=tuple((c, "mycelium") for c in cells),
        districts=tuple(cells),
        air=70,
        steps=2,
    )
    after = rules.step(state, WAIT).state
    target = max(0, min(100, base + len(cells) * per * (min(strength, cap) - demand)))
    assert shown(after)["air_target"] == target
    assert shown(after)["district_airflow"] == {cell_name(c): strength for c in cells}
    assert after.air == state.air + max(-rate, min(rate, target - state.air))
    weak = [(c, "the air circulation is too weak") for c in cells]
    assert list(after.offline) == ([] if strength >= least else weak)
    text = render.render(shown(after))
    assert f"target {target})" in text
    assert f"(airflow: {', '.join(f'{cell_name(c)} {strength}' for c in cells)})" in text


POWER = r"Generation = (\d+) \+ (\d+) per conduit cell on a seam, from the step it is laid\. A district draws (\d+) per step \((\d+) on or next to a conduit\)\. Each step storage \+= generation - draw - action cost, max (\d+); below 0 is a brownout \(storage 0, every district offline\)"  # noqa: E501


def test_power_is_what_the_text_says_from_the_step_a_conduit_is_laid() -> None:
    """The issue's case: extending a tap by two seam cells shows +3, not +7, because the
    change shown includes the conduit's cost; generation itself counts at once."""
    base_gen, tap, draw, draw_near, top = numbers(POWER, equation("Power and conduits"))
    state = world(0, 0)
    cost = next(c["cost"] for c in shown(state)["components"] if c["name"] == "conduit")
    row_seam = state.seams[0].cells
    one = rules.step(state, Action("conduit", (row_seam[1],))).state
    three = rules.step(one, Action("conduit", row_seam[:3])).state
    generation = base_gen + 3 * tap
    assert three.power_net == generation - 2 * cost == 3
    observation = shown(three)
    assert (observation["power_generation"], observation["power_draw"]) == (generation, 0)
    assert f"last step +3 with costs; generation {generation}, draw 0 a step" in render.render(
        observation
    )
    near, far = row_seam[3], (0, 4) if row_seam[0][1] != 4 else (0, 0)
    city = replace(three, districts=(near, far), chambers=(near, far), power=top - 2)
    after = rules.step(city, WAIT).state
    assert after.power == min(top, city.power + generation - draw_near - draw)
    poor = replace(city, power=0, conduits=())
    out = rules.step(poor, WAIT).state
    assert out.brownout and out.power == 0 and len(out.offline) == 2
    assert all(why == "brownout" for _cell, why in out.offline)
    assert poor.power + base_gen - 2 * draw < 0


# ----- the rules text -----------------------------------------------------------------


def test_the_rules_text_states_the_reward_terms_as_paid() -> None:
    text = " ".join(rules_text("megacity").split())
    gain = r"\+(\d+) / -(\d+) per point integrity rose / fell, \+(\d+) / -(\d+) per point air"
    assert numbers(gain, text) == [rules.R_INTEGRITY_GAIN] * 2 + [rules.R_AIR_GAIN] * 2
    low = r"-(\d+) per point integrity < (\d+),\s+-(\d+) per point air < (\d+)"
    assert numbers(low, text) == [
        -rules.R_INTEGRITY_LOW,
        INTEGRITY_THRESHOLD,
        -rules.R_AIR_LOW,
        AIR_THRESHOLD,
    ]
    start = r"Start: 0 districts, integrity (\d+), air (\d+), power (\d+)"
    assert numbers(start, text) == [START_INTEGRITY, START_AIR, START_POWER]
    kept = r"keep structural integrity above (\d+), the air index above (\d+)"
    assert numbers(kept, text) == [INTEGRITY_THRESHOLD, AIR_THRESHOLD]
    assert numbers(r"\+(\d+) per district opened", text) == [rules.R_DISTRICT]
    assert numbers(r"\+(\d+) the first time power exceeds (\d+)", text) == [
        rules.R_POWER_FIRST,
        rules.POWER_BONUS_LEVEL,
    ]
    assert numbers(r"\+(\d+) per rule decoded", text) == [rules.R_DECODED]
    assert f"+{rules.R_STEADY:g} if integrity > 80 and air > 60" in text
    assert f"Integrity or air at 0: {rules.R_CATASTROPHE:g}" in text
    assert f"(+{rules.R_VICTORY:g} victory)" in text
    assert (
        f"Victory also pays +{rules.R_MARGIN:g} per point of final integrity over 80 and air "
        f"over 60, +{rules.R_POWER_LEFT:g} per power left, +{rules.R_SIX_RUNNING:g} per step "
        "six districts ran" in text
    )


def test_six_running_districts_win_even_with_a_seventh_offline() -> None:
    """'six districts running at step 40': a seventh that does not run costs nothing."""
    cells = SITES
    state = open_world(
        base_flow=tuple(tuple((5, 0) for _ in range(SIZE)) for _ in range(SIZE)),
        chambers=(*cells, (2, 2)),
        supports=tuple((c, "mycelium") for c in cells),
        districts=(*cells, (2, 2)),
        steps=39,
        power=100,
    )
    out = rules.step(state, WAIT)
    assert out.state.offline == (((2, 2), "no support column"),) and out.success


def test_a_column_in_undug_rock_is_not_shown_as_rock() -> None:
    state = world(0, 2, power=100)
    propped = rules.step(state, parse("support C3 timber")).state
    assert shown(propped)["sites"][SIZE - 3][2] == "|"
    dug = rules.step(propped, parse("excavate C3")).state
    assert shown(dug)["sites"][SIZE - 3][2] == "S"
    assert shown(state)["sites"][SIZE - 3][2] == "."
