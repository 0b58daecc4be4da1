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

SEAM_FLOW = r"every seam cell but the last passes (\d+)% of its stress \(rounded down; x(\d+) with a conduit on it\) to the next one downstream, all at once; the last keeps it \(max (\d+)\)"  # noqa: E501
PULL = r"per seam, (\d+) if it runs through the cell, else (\d+) if through a neighbour; x(\d+) with a conduit on the cell"  # noqa: E501
TRANSFER = r"adds (\d+) stress to each orthogonal neighbour \((\d+) if the dug cell is a fault; max (\d+)\)\. Along each seam through it, cells (\d+)\+ steps away lose (\d+) and the cells beside those, off that seam, lose (\d+) \(min (\d+)\)"  # noqa: E501


def text_seam_flow(stress: Grid, state: MegacityState) -> Grid:
    """'Each step, row seam first, every seam cell but the last passes 12% ...'"""
    text = equation("Sideways gravity")
    assert "row seam first" in text
    pct, gain, top = numbers(SEAM_FLOW, text)
    grid = [list(row) for row in stress]
    for seam in sorted(state.seams, key=lambda s: s.direction not in ("east", "west")):
        before = {(c, r): grid[r][c] for c, r in seam.cells}
        for here, there in zip(seam.cells, seam.cells[1:], strict=False):
            amount = before[here] * pct * (gain if here in state.conduits else 1) // 100
            grid[here[1]][here[0]] -= amount
            grid[there[1]][there[0]] = min(top, grid[there[1]][there[0]] + amount)
    return tuple(map(tuple, grid))


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
