"""Megacity: physics properties, every reward term, terminations, parsing, golden runs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import textenvs
from tests.conftest import assert_golden, play, render_transcript, transcript_digest
from textenvs.agents.scripted.megacity import MegacityPolicy, rebuild
from textenvs.agents.scripted.megacity_baselines import BASELINES
from textenvs.core.parsing import ParseError
from textenvs.episodes.loop import context_for
from textenvs.scenarios.megacity import maps, research, rules
from textenvs.scenarios.megacity import physics as p
from textenvs.scenarios.megacity.parameters import PHYSICS, Physics
from textenvs.scenarios.megacity.parse import parse
from textenvs.scenarios.megacity.state import Action, MegacityState, Seam

WAIT = Action("wait")


def base_state(**changes: object) -> MegacityState:
    """A hand-made world: row-1 seam pulling east, column-A seam pulling north, airflow
    north 3 everywhere, flat stress 40, one fault at E5."""
    seams = (
        Seam(tuple((c, 0) for c in range(5)), "east"),
        Seam(tuple((0, r) for r in range(5)), "north"),
    )
    state = MegacityState(
        stress=tuple(tuple(40 for _ in range(5)) for _ in range(5)),
        seams=seams,
        faults=((4, 4),),
        base_flow=tuple(tuple((0, 3) for _ in range(5)) for _ in range(5)),
    )
    return replace(state, **changes)


def terms(transition: object) -> dict[str, float]:
    return next(e["terms"] for e in transition.events if e["type"] == "reward")  # type: ignore[attr-defined]


def city(cells: list[tuple[int, int]], **changes: object) -> MegacityState:
    """Supported (basalt) district chambers at `cells`."""
    state = base_state(
        chambers=tuple(cells),
        supports=tuple((c, "basalt") for c in cells),
        districts=tuple(cells),
    )
    return replace(state, **changes)


# ----- determinism and the world generator ----------------------------------------------


def test_same_seed_same_world_and_different_seeds_differ() -> None:
    a = textenvs.make("megacity")
    b = textenvs.make("megacity")
    a.reset(seed=4)
    b.reset(seed=4)
    assert a._state == b._state
    b.reset(seed=5)
    assert a._state != b._state
    assert transcript_digest(play("megacity", "scripted", 3)) == transcript_digest(
        play("megacity", "scripted", 3)
    )


@pytest.mark.parametrize("seed", range(30))
def test_initial_maps_follow_the_generator(seed: int) -> None:
    state = maps.initial_state(np.random.default_rng(seed))
    assert (state.integrity, state.air, state.power, state.districts) == (100, 85, 50, ())
    assert all(0 <= v <= 100 for row in state.stress for v in row)
    assert len(state.seams) == 2 and len(state.faults) == 3
    assert not set(state.faults) & p.seam_cells(state)
    # Seams lie on inner lines: only four cells are clear of sideways pull.
    clear = [
        (c, r) for r in range(5) for c in range(5) if p.pull_of(PHYSICS, state.seams, (c, r)) == 0
    ]
    assert len(clear) == 4
    # The base field is a prevailing current: every cell has strength 1-4.
    assert all(1 <= p.strength(v) <= 4 for row in state.base_flow for v in row)


# ----- physics ----------------------------------------------------------------------------


def test_airflow_reverses_every_eight_steps_and_shafts_do_not() -> None:
    env = textenvs.make("megacity")
    _text, info = env.reset(seed=2)
    first = info["observation"]["airflow"]
    seen = [first]
    for _ in range(17):
        _text, *_rest, info = env.step("wait")
        seen.append(info["observation"]["airflow"])
    flipped = [[_negate(v) for v in row] for row in first]
    assert all(seen[i] == first for i in range(8))
    assert all(seen[i] == flipped for i in range(8, 16))
    assert seen[16] == seen[17] == first
    state = base_state(vents=(((1, 1), "east"),))
    normal = p.flow_field(PHYSICS, state.base_flow, state.vents, 0)
    reversed_ = p.flow_field(PHYSICS, state.base_flow, state.vents, 8)
    assert normal[1][1] == (2, 3) and reversed_[1][1] == (2, -3)
    assert normal[1][0] == (0, 3)  # the shaft starts at B2 and runs east only


def _negate(text: str) -> str:
    swap = {"N": "S", "S": "N", "E": "W", "W": "E"}
    return "".join(swap.get(ch, ch) for ch in text)


def test_sideways_gravity_moves_stress_downstream_along_seams() -> None:
    state = base_state()
    after = p.seam_flow(state.stress, state)
    row1 = after[0]
    assert row1[4] > 40 and row1[1] == 40  # B1 gives 6 and receives 6
    assert sum(sum(r) for r in after) == sum(sum(r) for r in state.stress)
    tapped = replace(state, conduits=((1, 0),))
    assert p.seam_flow(tapped.stress, tapped)[0][2] > row1[2]  # conduit amplifies the pull


def test_excavation_loads_neighbours_and_relieves_distant_seam_cells() -> None:
    state = base_state()
    after = p.excavation_transfer(state, (1, 0))  # B1 on the row-1 seam
    assert after[0][3] == after[0][4] == 40 - PHYSICS.seam_relief  # D1, E1 two or more away
    assert after[1][3] == after[1][4] == 40 - PHYSICS.flank_relief  # D2, E2 beside them
    assert after[0][2] == 40 + PHYSICS.excavate_neighbour_load  # C1 adjacent: loaded
    assert after[1][1] == 40 + PHYSICS.excavate_neighbour_load  # B2 above it: loaded
    assert after[2][3] == 40  # D3 is not beside the seam
    fault = p.excavation_transfer(state, (4, 4))
    assert fault[3][4] == 40 + PHYSICS.fault_neighbour_load


def test_sideways_pull_acts_on_and_beside_seams_and_materials_answer_differently() -> None:
    on_seam, beside, clear = (2, 0), (2, 1), (2, 2)  # C1 on row 1, C2 beside it, C3 clear
    assert [p.pull_of(PHYSICS, base_state().seams, c) for c in (on_seam, beside, clear)] == [
        20,
        10,
        0,
    ]
    expected = {
        on_seam: {"basalt": 40, "timber": 20, "mycelium": 0, "lodestone": 15},
        beside: {"basalt": 20, "timber": 10, "mycelium": 0, "lodestone": 5},
        clear: {"basalt": 0, "timber": 0, "mycelium": 0, "lodestone": 0},
    }
    for cell, by_material in expected.items():
        for material, excess in by_material.items():
            state = base_state(chambers=(cell,), supports=((cell, material),))
            assert p.chamber_excess(state, cell) == excess, (cell, material)
    assert p.chamber_excess(base_state(chambers=(clear,)), clear) == 10  # bare: 40 - 30
    tapped = base_state(chambers=(beside,), supports=((beside, "mycelium"),), conduits=(beside,))
    assert p.lateral_load(tapped, beside) == 20  # a conduit doubles the pull on its cell


# ----- one focused test per reward term -------------------------------------------------


def test_integrity_changes_pay_two_per_point_both_ways() -> None:
    state = base_state(chambers=((2, 2),))
    state = replace(state, integrity=p.integrity_of(state))
    assert state.integrity == 90
    out = rules.step(state, Action("support", ((2, 2),), "basalt"))
    assert out.state.integrity == 100 and terms(out)["integrity_gain"] == 20.0
    assert "integrity_gain" not in terms(rules.step(out.state, WAIT))
    dug = rules.step(out.state, Action("excavate", ((3, 2),)))  # a bare chamber: a dip
    assert terms(dug)["integrity_loss"] == -2.0 * (100 - dug.state.integrity) < 0


def test_self_inflicted_dips_cannot_be_farmed() -> None:
    """Swapping a column back and forth, or digging then propping, pays nothing net."""
    cell = (2, 1)  # beside the row-1 seam: timber 10 excess, basalt 20
    state = base_state(chambers=(cell,), supports=((cell, "timber"),))
    state = replace(state, integrity=p.integrity_of(state))
    changes = 0.0
    for material in ["basalt", "timber"] * 5:
        out = rules.step(state, Action("support", (cell,), material))
        found = terms(out)
        changes += found.get("integrity_gain", 0.0) + found.get("integrity_loss", 0.0)
        state = out.state
    assert changes == 0.0
    farm = [play_policy("farm-swap", seed)[1] for seed in range(3)]
    farm += [play_policy("farm-dig", seed)[1] for seed in range(3)]
    planner = [play_policy("planner", seed)[1] for seed in range(3)]
    assert max(farm) < min(planner)


def test_air_changes_pay_one_per_point_both_ways() -> None:
    out = rules.step(base_state(air=70), WAIT)
    assert out.state.air == 70 + PHYSICS.air_rate and terms(out)["air_gain"] == PHYSICS.air_rate
    assert "air_gain" not in terms(rules.step(base_state(), WAIT))
    falling = rules.step(base_state(air=95), WAIT)  # heads back to 85
    assert terms(falling)["air_loss"] == -PHYSICS.air_rate


def test_district_activation_pays_five_and_checks_support_and_air() -> None:
    cell = (2, 2)
    ready = base_state(chambers=(cell,), supports=((cell, "basalt"),))
    out = rules.step(ready, Action("district", (cell,)))
    assert out.state.districts == (cell,) and terms(out)["district"] == 5.0
    unsupported = rules.step(base_state(chambers=(cell,)), Action("district", (cell,)))
    assert "district" not in terms(unsupported)
    assert unsupported.state.report[0] == "District refused at C3: no support column."
    still = replace(ready, base_flow=tuple(tuple((0, 1) for _ in range(5)) for _ in range(5)))
    weak = rules.step(still, Action("district", (cell,)))
    assert "district" not in terms(weak) and "too weak" in weak.state.report[0]
    pulled = (2, 1)  # beside a seam: basalt cannot carry the sideways pull
    shaky = base_state(chambers=(pulled,), supports=((pulled, "basalt"),))
    refused = rules.step(shaky, Action("district", (pulled,)))
    assert "cannot carry the load" in refused.state.report[0]


def test_power_above_80_pays_three_only_the_first_time() -> None:
    out = rules.step(base_state(power=80), WAIT)
    assert (
        out.state.power == 80 + PHYSICS.power_base_gen and terms(out)["power_first_above_80"] == 3.0
    )
    again = rules.step(replace(out.state, power=80), WAIT)
    assert "power_first_above_80" not in terms(again)
    assert "power_first_above_80" not in terms(rules.step(base_state(power=70), WAIT))


def test_each_fully_decoded_rule_pays_four() -> None:
    clue = rules.step(base_state(), Action("research"))
    assert clue.state.research == 1 and "rule_decoded" not in terms(clue)
    decoded = rules.step(clue.state, Action("research"))
    assert terms(decoded)["rule_decoded"] == 4.0
    done = base_state(research=research.TOTAL_POINTS)
    refused = rules.step(done, Action("research"))
    assert refused.state.power == done.power + PHYSICS.power_base_gen  # nothing spent


def test_steady_half_point_needs_both_thresholds() -> None:
    assert terms(rules.step(base_state(), WAIT))["steady"] == 0.5
    low_air = rules.step(base_state(air=58), WAIT)  # air 66 > 60 after the step
    assert low_air.state.air == 58 + PHYSICS.air_rate and terms(low_air)["steady"] == 0.5
    assert "steady" not in terms(rules.step(base_state(air=50), WAIT))


def test_integrity_below_80_costs_two_per_point() -> None:
    state = base_state(
        chambers=((2, 2),), stress=tuple(tuple(65 for _ in range(5)) for _ in range(5))
    )
    out = rules.step(state, WAIT)  # bare chamber: 65 - 30 = 35 excess
    assert out.state.integrity == 65 and terms(out)["integrity_low"] == -30.0
    assert "steady" not in terms(out)


def test_air_below_60_costs_one_per_point() -> None:
    out = rules.step(base_state(air=40), WAIT)
    assert out.state.air == 48 and terms(out)["air_low"] == -12.0


def test_collapse_is_minus_40_and_terminates() -> None:
    heavy = tuple(tuple(90 for _ in range(5)) for _ in range(5))
    state = base_state(chambers=((1, 2), (3, 2)), stress=heavy)
    out = rules.step(state, Action("excavate", ((2, 3),)))
    assert out.terminated and not out.success and out.state.outcome == "collapse"
    assert out.state.integrity == 0 and terms(out)["catastrophe"] == -40.0


def test_suffocation_is_minus_40_and_terminates() -> None:
    breathless = tuple(tuple((0, 0) for _ in range(5)) for _ in range(5))
    cells = [(1, 1), (3, 1), (1, 3), (3, 3), (2, 2), (4, 2)]
    out = rules.step(city(cells, air=2, base_flow=breathless), WAIT)
    assert out.terminated and out.state.air == 0 and out.state.outcome == "suffocation"
    assert terms(out)["catastrophe"] == -40.0
    assert not rules.step(city(cells, air=9, base_flow=breathless), WAIT).terminated


CLEAR_SIX = [(2, 2), (3, 2), (4, 2), (2, 3), (3, 3), (4, 3)]  # clear of sideways pull
RICH = tuple(tuple((0, 5) for _ in range(5)) for _ in range(5))


def test_victory_pays_40_at_step_40_and_terminates() -> None:
    won = rules.step(city(CLEAR_SIX, steps=39, power=60, base_flow=RICH), WAIT)
    assert won.terminated and won.success and terms(won)["victory"] == 40.0
    assert not rules.step(city(CLEAR_SIX, steps=38, power=60, base_flow=RICH), WAIT).terminated
    five = rules.step(city(CLEAR_SIX[:5], steps=39, power=60, base_flow=RICH), WAIT)
    assert not five.terminated and "victory" not in terms(five)
    brownout = rules.step(city(CLEAR_SIX, steps=39, power=0, base_flow=RICH), WAIT)
    assert brownout.state.brownout and not brownout.terminated
    assert brownout.state.offline and all(why == "brownout" for _c, why in brownout.state.offline)


def test_a_broken_threshold_is_remembered_and_forfeits_victory() -> None:
    state = city(CLEAR_SIX, steps=20, power=60, base_flow=RICH, air=62)
    dipped = rules.step(
        replace(state, base_flow=tuple(tuple((0, 1) for _ in range(5)) for _ in range(5))), WAIT
    )
    assert dipped.state.air <= 60 and dipped.state.breach == "air fell to 54 at step 21"
    assert any(e["type"] == "breach" for e in dipped.events)
    healed = replace(dipped.state, base_flow=RICH, air=85, steps=39)
    end = rules.step(healed, WAIT)
    assert not end.terminated and "victory" not in terms(end)
    # Before the first district dips are only priced, not remembered.
    empty = rules.step(base_state(air=50), WAIT)
    assert empty.state.breach == ""


def test_late_openings_cannot_outrun_the_air_rule() -> None:
    """Six districts opened in the last six steps, each short of breath (strength 3),
    still break the air threshold before step 40: air moves fast enough to reach its
    target within the window, so the rule tests ventilation, not the opening date."""
    weak = tuple(tuple((0, 3) for _ in range(5)) for _ in range(5))
    state = base_state(
        chambers=tuple(CLEAR_SIX),
        supports=tuple((c, "basalt") for c in CLEAR_SIX),
        base_flow=weak,
        steps=34,
        power=90,
    )
    for cell in CLEAR_SIX:
        state = rules.step(state, Action("district", (cell,))).state
    assert state.steps == 40 and state.breach.startswith("air fell to")
    assert p.air_target(state, p.flow_field(PHYSICS, weak, (), 40)) < 60 and state.air < 60


def test_conduit_damping_is_a_one_off_and_only_off_the_seams() -> None:
    state = base_state()
    laid = rules.step(state, Action("conduit", ((2, 2), (2, 1), (2, 0)))).state
    assert laid.stress_at((2, 2)) == 40 - PHYSICS.conduit_damp  # off the seams: relieved once
    assert laid.stress_at((2, 0)) != 40 - PHYSICS.conduit_damp  # on the row-1 seam: no damping
    later = rules.step(laid, WAIT).state
    assert later.stress_at((2, 2)) == laid.stress_at((2, 2))  # not again next step
    again = rules.step(later, Action("conduit", ((2, 2),))).state
    assert again.stress_at((2, 2)) == later.stress_at((2, 2))  # refused: nothing new


def test_district_pay_stops_at_six_and_victory_pays_for_quality() -> None:
    seventh = (4, 4)
    cells = [*CLEAR_SIX, seventh]
    state = base_state(
        chambers=tuple(cells),
        supports=tuple((c, "lodestone") for c in cells),
        districts=tuple(CLEAR_SIX),
        base_flow=RICH,
        power=60,
    )
    assert "district" not in terms(rules.step(state, Action("district", (seventh,))))
    won = rules.step(city(CLEAR_SIX, steps=39, power=60, base_flow=RICH, six_running=12), WAIT)
    s = won.state
    expected = rules.plan_quality(s.integrity, s.air, s.power, 13)
    assert terms(won)["plan_quality"] == expected
    assert expected == 0.5 * ((s.integrity - 80) + (s.air - 60)) + 0.1 * s.power + 0.5 * 13
    poorer = rules.step(city(CLEAR_SIX, steps=39, power=20, base_flow=RICH), WAIT)
    assert poorer.success and terms(poorer)["plan_quality"] < expected


def test_a_district_must_still_run_after_the_final_reversal() -> None:
    """Flow that only the forward phase provides fails the step-40 check (reversed)."""
    east = tuple(tuple((3, 0) for _ in range(5)) for _ in range(5))
    shafts = tuple(((2, r), "east") for r in (2, 3))  # along the current: +2 east
    state = city(CLEAR_SIX, steps=39, power=60, base_flow=east, vents=shafts, air=85)
    assert p.flow_field(PHYSICS, east, shafts, 39)[2][2] == (5, 0)
    end = rules.step(state, WAIT)
    assert p.flow_field(PHYSICS, east, shafts, 40)[2][2] == (-1, 0)
    assert not end.success and {why for _c, why in end.state.offline} == {
        "the air circulation is too weak"
    }


def test_env_truncates_at_step_40_without_victory() -> None:
    env = textenvs.make("megacity")
    env.reset(seed=0)
    for _ in range(39):
        assert env.step("wait")[2:4] == (False, False)
    _text, _reward, terminated, truncated, info = env.step("wait")
    assert truncated and not terminated and not info["success"]
    assert info["observation"]["status"] == "out_of_steps"


# ----- commands ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("excavate B3", "excavate B3"),
        ("Dig c2", "excavate C2"),
        ("support C2 basalt", "support C2 basalt"),
        ("place support at c2 with timber", "support C2 timber"),
        ("support mycelium D4", "support D4 mycelium"),
        ("vent A1 east", "vent A1 east"),
        ("vent a1 e", "vent A1 east"),
        ("dig a ventilation shaft from A1 towards the north", "vent A1 north"),
        ("conduit B2 B3 B4", "conduit B2 B3 B4"),
        ("install power conduit on b2, b3", "conduit B2 B3"),
        ("district B3", "district B3"),
        ("Build district core at e5.", "district E5"),
        ("research", "research"),
        ("scan", "scan"),
        ("wait", "wait"),
        ("I think the air is fine.\n\nAction: `excavate B3`", "excavate B3"),
        ("**district b3** it is", "district B3"),
    ],
)
def test_commands_parse(text: str, command: str) -> None:
    assert parse(text).command() == command


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("excavate C9", "C9 is outside the 5x5 grid (A-E, 1-5)."),
        ("Action: district F1", "F1 is outside the 5x5 grid (A-E, 1-5)."),
        ("conduit B2 B4", "B2 and B4 are not adjacent"),
        ("conduit B1 B2 B3 B4", "at most 3 cells"),
        ("conduit B2 B3 B2", "cannot visit a cell twice"),
        ("support C2 granite", "'granite' is not a support material"),
        ("vent A1 up", "'up' is not a direction"),
        ("support C2", "incomplete; use support CELL MATERIAL"),
        ("excavate B3 then district B3", "names 2 different commands"),
        ("build something nice", "no command found"),
    ],
)
def test_bad_commands_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert message in caught.value.message


def test_an_unreadable_reply_is_a_turn_in_which_nothing_is_built() -> None:
    env = textenvs.make("megacity")
    env.reset(seed=1)
    state = env._state
    text, reward, *_rest, info = env.step("excavate C9")
    assert text.startswith("Invalid command: C9 is outside the 5x5 grid (A-E, 1-5).")
    waited = rules.step(state, WAIT)
    assert env._state.steps == 1 == info["steps_used"]
    assert env._state.stress == waited.state.stress and env._state.power == waited.state.power
    assert reward == waited.reward
    assert env._state.report == ("Your reply was unreadable: nothing was built.",)


def test_the_city_clock_never_drifts_from_the_turn_budget() -> None:
    env = textenvs.make("megacity")
    _text, info = env.reset(seed=5)
    rng = np.random.default_rng(5)
    while not env.done:
        command = env.random_command(info, rng) if rng.random() < 0.6 else "hmm, not sure"
        *_rest, info = env.step(command)
        assert env._state.steps == info["steps_used"] == info["observation"]["step"]
    assert info["steps_used"] == env.max_steps or env._state.outcome != "playing"


def test_one_unreadable_reply_does_not_cost_the_planner_its_victory() -> None:
    """At any single turn (here a different one per seed) the planner still wins."""
    seeds = [s for s in range(12) if play_policy("planner", s)[0]]
    assert len(seeds) >= 10
    kept = sum(play_policy("planner", s, inject_at=(7 * s + 3) % 40)[0] for s in seeds)
    assert kept >= 0.95 * len(seeds)


def test_random_commands_are_well_formed_and_cover_every_form() -> None:
    env = textenvs.make("megacity")
    _text, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    kinds = set()
    for _ in range(400):
        command = env.random_command(info, rng)
        kinds.add(parse(command).kind)
    assert kinds == {
        "excavate",
        "support",
        "vent",
        "conduit",
        "district",
        "research",
        "scan",
        "wait",
    }


def test_locked_material_and_unaffordable_actions_are_refused_for_free() -> None:
    state = base_state(chambers=((2, 2),))
    out = rules.step(state, Action("support", ((2, 2),), "lodestone"))
    assert out.state.supports == () and "locked" in out.state.report[0]
    poor = rules.step(base_state(power=2), Action("excavate", ((2, 2),)))
    assert poor.state.chambers == () and "needs 4 power" in poor.state.report[0]
    unlocked = rules.step(replace(state, research=4), Action("support", ((2, 2),), "lodestone"))
    assert unlocked.state.supports == (((2, 2), "lodestone"),)


# ----- the observation hides the equations ------------------------------------------------


def test_observation_never_shows_the_equations_before_research() -> None:
    """Rule texts, material capacities and constants appear only once research shows the
    rule text that contains them."""
    env = textenvs.make("megacity")
    text, info = env.reset(seed=0)
    hidden = [text for rule in research.RULES for text in rule[1:]]
    hidden += [f"still {spec[0]}" for spec in p.MATERIAL_SPECS.values()]
    hidden += ["every 8 steps", "15%", "SEAM_", "O2_DEMAND"]
    for _ in range(research.TOTAL_POINTS + 1):
        shown = [item["text"] for item in info["observation"]["research"] if item["text"]]
        for secret in hidden:
            if secret in text or secret in repr(info["observation"]):
                assert any(secret in revealed for revealed in shown), secret
        if env._state.research == 0:
            assert not shown and "Capacities" not in text and "capacity" not in text
        text, *_rest, info = env.step("research")
    assert all(rule[2] in text for rule in research.RULES)


# ----- agents and golden transcripts ------------------------------------------------------


def play_policy(
    name: str, seed: int, inject_at: int | None = None
) -> tuple[bool, float, MegacityState]:
    """(victory, return, final state) of the planner or a baseline policy."""
    env = textenvs.make("megacity")
    _text, info = env.reset(seed=seed)
    cls = MegacityPolicy if name == "planner" else BASELINES[name]
    policy = cls(context_for(env, seed))
    total = 0.0
    while not env.done:
        command = policy.choose(info["observation"])
        *_rest, reward, _terminated, _truncated, info = env.step(
            "(no idea)" if env.steps_used == inject_at else command
        )
        total += reward
    return bool(info["success"]), total, env._state


def test_scripted_planner_wins_and_random_does_not() -> None:
    seeds = range(8)
    scripted = [play("megacity", "scripted", s) for s in seeds]
    assert sum(r.success for r in scripted) >= 7
    assert all(r.steps == 40 for r in scripted if r.success)
    assert not any(play("megacity", "random", s).success for s in seeds)


@pytest.mark.parametrize("name", ["naive", "fixed", "wait"])
def test_builders_that_do_not_learn_from_the_world_lose(name: str) -> None:
    assert not any(play_policy(name, seed)[0] for seed in range(6))


@pytest.mark.parametrize("name", ["recipe", "recipe-no-damping"])
def test_the_v1_recipe_no_longer_wins_most_seeds(name: str) -> None:
    """v1's recipe (conduits on six low-stress cells off the seams, late openings) won
    86.5%; with one-off damping, a fast air index and scarce sites it rarely wins."""
    assert sum(play_policy(name, seed)[0] for seed in range(20)) <= 3


def planner_wins(
    seed: int, without: frozenset[str] = frozenset(), physics: Physics = PHYSICS
) -> bool:
    env = textenvs.make("megacity", physics=physics)
    _text, info = env.reset(seed=seed)
    policy = MegacityPolicy(context_for(env, seed), without, physics)
    while not env.done:
        *_rest, info = env.step(policy.choose(info["observation"]))
    if "vent" in without:
        assert not env._state.vents
    return bool(info["success"])


def test_victories_need_relief_digs_seam_flow_and_shafts() -> None:
    """The mechanisms decide seeds: seed 1 is won only with a relief dig, seed 0 only
    with seam flow, and neither without shafts (benchmarks/megacity_needs measures the
    shares over 500 seeds)."""
    assert planner_wins(1) and not planner_wins(1, frozenset({"relief"}))
    assert planner_wins(0) and not planner_wins(0, frozenset({"vent"}))
    assert not planner_wins(0, physics=replace(PHYSICS, seam_flow_pct=0))


def test_a_physics_variant_changes_only_its_own_world() -> None:
    """A variant is a value its world carries: with seam flow switched off a seam's
    stress stays where it was after a `wait`; a default world made after it moves it."""
    still = textenvs.make("megacity", physics=replace(PHYSICS, seam_flow_pct=0))
    moving = textenvs.make("megacity")
    start = moving.world_for(0)
    seam = start.seams[0].cells
    ends = []
    for env in (still, moving):
        env.reset(seed=0)
        env.step("wait")
        ends.append([env._state.stress_at(c) for c in (seam[0], seam[-1])])
    assert ends[0] == [start.stress_at(seam[0]), start.stress_at(seam[-1])]
    assert ends[1] != ends[0] and moving._state.physics == PHYSICS


def test_the_planner_rebuilds_the_world_from_the_observation_alone() -> None:
    env = textenvs.make("megacity")
    _text, info = env.reset(seed=3)
    policy = MegacityPolicy(context_for(env, 3))
    while not env.done:
        *_rest, info = env.step(policy.choose(info["observation"]))
        if info["observation"]["seams"] is not None:
            seen, true = rebuild(info["observation"]), env._state
            for name in ("stress", "seams", "faults", "base_flow", "chambers", "supports"):
                assert getattr(seen, name) == getattr(true, name), name
            assert (seen.districts, seen.vents, seen.conduits, seen.steps) == (
                true.districts,
                true.vents,
                true.conduits,
                true.steps,
            )


def test_observation_and_rules_stay_short() -> None:
    env = textenvs.make("megacity")
    text, _info = env.reset(seed=2)
    longest = len(text)
    for command in ["scan", *["research"] * 10, "district B3"]:
        text, *_rest = env.step(command)
        longest = max(longest, len(text))
    assert longest <= 3500 and len(env.rules) <= 3500


@pytest.mark.parametrize("agent", ["scripted", "random"])
def test_golden_transcripts(agent: str) -> None:
    assert_golden(f"megacity-{agent}-seed0", render_transcript(play("megacity", agent, 0)))
