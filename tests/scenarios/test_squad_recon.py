"""Squad Recon: generation, line of sight, fog, combat, orders, parser, agents, goldens."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import textenvs
from tests.conftest import assert_golden, play, render_transcript
from textenvs.agents import make_agent
from textenvs.core.parsing import ParseError
from textenvs.episodes.loop import context_for
from textenvs.scenarios.squad_recon import parse as parsing
from textenvs.scenarios.squad_recon import rules, terrain
from textenvs.scenarios.squad_recon.state import (
    SIZE,
    STARTS,
    SYMBOLS,
    Camp,
    Order,
    Orders,
    ReconState,
    Squad,
    Terrain,
)

OPEN_ROW = tuple([Terrain.OPEN] * SIZE)


def field(walls: dict[tuple[int, int], Terrain] | None = None) -> tuple:
    cells = [list(OPEN_ROW) for _ in range(SIZE)]
    for (x, y), kind in (walls or {}).items():
        cells[y][x] = kind
    return tuple(tuple(row) for row in cells)


def world(
    squads: list[tuple[tuple[int, int], int]],
    camps: list[tuple[tuple[int, int], int]],
    grid: tuple | None = None,
) -> ReconState:
    state = ReconState(
        terrain=grid or field(),
        squads=tuple(Squad(n, p, s) for n, (p, s) in zip("ABC", squads, strict=True)),
        camps=tuple(Camp(p, s) for p, s in camps),
        seen=frozenset(),
    )
    return ReconState(state.terrain, state.squads, state.camps, rules.sweep(state, state.squads))


def env_with(state: ReconState):  # type: ignore[no-untyped-def]
    env = textenvs.make("squad-recon")
    env.reset(seed=0)
    env._state = state
    return env


def orders(text: str) -> Orders:
    return parsing.parse(text)


# ----- generation ----------------------------------------------------------------------


def test_generation_is_valid_and_bounded_on_many_seeds() -> None:
    positions = set()
    for seed in range(300):
        rng = np.random.default_rng(seed)
        grid, camps, attempts = terrain.generate(rng)
        assert attempts <= terrain.MAX_ATTEMPTS  # the all-open fallback is never needed
        walk = terrain.reachable(grid, STARTS, blocked=camps)
        for camp in camps:
            assert grid[camp[1]][camp[0]] is Terrain.OPEN
            assert not (camp[0] < 5 and camp[1] < 5)
            assert any((camp[0] + dx, camp[1] + dy) in walk for dx, dy in rules.MOVES.values())
        assert abs(camps[0][0] - camps[1][0]) + abs(camps[0][1] - camps[1][1]) >= 3
        assert all(grid[y][x] is Terrain.OPEN for x in range(4) for y in range(4))
        positions.update(camps)
        state = rules.initial_state(np.random.default_rng(seed))
        assert [s.position for s in state.squads] == list(STARTS)
        assert all(1 <= s.strength <= 4 for s in state.squads)
        assert all(2 <= c.strength <= 6 for c in state.camps) and len(state.camps) == 2
        assert not any(c.position in state.seen for c in state.camps)  # hidden at start
        kinds = {cell for row in state.terrain for cell in row}
        assert kinds == set(Terrain)
    assert len(positions) > 100


def test_strengths_cover_their_ranges() -> None:
    squads, camps = set(), set()
    for seed in range(200):
        state = rules.initial_state(np.random.default_rng(seed))
        squads |= {s.strength for s in state.squads}
        camps |= {c.strength for c in state.camps}
    assert squads == {1, 2, 3, 4} and camps == {2, 3, 4, 5, 6}


# ----- line of sight -------------------------------------------------------------------


def _sampled_between(dx: int, dy: int) -> set[tuple[int, int]]:
    """Cells the centre-to-centre line visits, by dense sampling (never on a boundary)."""
    n = 10007  # prime: no sample lands exactly on a cell edge for |d| <= 3
    # The cell of coordinate t*d is floor(t*d + 1/2), in exact integer arithmetic.
    out = {((2 * k * dx + n) // (2 * n), (2 * k * dy + n) // (2 * n)) for k in range(1, n)}
    return out - {(0, 0), (dx, dy)}


@pytest.mark.parametrize("dx", range(-3, 4))
def test_between_matches_a_sampled_line(dx: int) -> None:
    for dy in range(-3, 4):
        assert set(terrain.between(dx, dy)) == _sampled_between(dx, dy), (dx, dy)


def test_forest_blocks_sight_walls_do_not() -> None:
    forest = {(3, 5)}
    seen = terrain.visible_cells(lambda c: c in forest, (2, 5))
    assert (3, 5) in seen  # the forest cell itself is seen
    assert (4, 5) not in seen and (5, 5) not in seen  # hidden behind it
    assert (5, 6) not in seen  # the line to (5,6) clips the forest cell's interior
    assert (4, 7) in seen and (5, 8) in seen  # lines that miss it
    assert (6, 5) not in seen and (2, 9) not in seen  # outside the 7x7 window
    walled = world([((2, 5), 1), ((0, 0), 1), ((0, 1), 1)], [], field({(3, 5): Terrain.WALL}))
    assert {(4, 5), (5, 5)} <= walled.seen  # a wall does not block sight
    assert len(terrain.visible_cells(lambda c: False, (7, 7))) == 49
    assert len(terrain.visible_cells(lambda c: False, (0, 0))) == 16  # clipped by the edge
    # A line through the corner where two forest cells touch passes neither.
    corner = {(1, 0), (0, 1)}
    assert (1, 1) in terrain.visible_cells(lambda c: c in corner, (0, 0))


def test_line_of_sight_is_symmetric_on_generated_maps() -> None:
    for seed in range(20):
        state = rules.initial_state(np.random.default_rng(seed))

        def is_forest(c: tuple[int, int], s: ReconState = state) -> bool:
            return s.at(c) is Terrain.FOREST

        opens = [(x, y) for x in range(SIZE) for y in range(SIZE) if not is_forest((x, y))]
        sights = {cell: terrain.visible_cells(is_forest, cell) for cell in opens}
        for a in opens:
            for b in sights[a]:
                if b in sights:
                    assert a in sights[b], (seed, a, b)


# ----- fog of war ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "agent_name,seed", [("random", 1), ("random", 2), ("scripted", 3), ("scripted", 4)]
)
def test_fog_shows_exactly_what_sensors_saw(agent_name: str, seed: int) -> None:
    """Recompute the seen set independently from the squads' reported positions."""
    env = textenvs.make("squad-recon")
    agent = make_agent(agent_name)
    text, info = env.reset(seed=seed)
    agent.reset(context_for(env, seed))
    state = env._state
    forest = lambda c: state.at(c) is Terrain.FOREST  # noqa: E731
    seen: set[tuple[int, int]] = set()
    before = info["observation"]["squads"]
    for squad in before:
        seen |= terrain.visible_cells(forest, (squad["x"], squad["y"]))
    for _ in range(env.max_steps + 1):
        obs = info["observation"]
        for r, row in enumerate(obs["map"]):
            for x, ch in enumerate(row):
                cell = (x, SIZE - 1 - r)
                assert (ch != "?") == (cell in seen), cell
                if ch in ".#T":
                    assert ch == SYMBOLS[state.at(cell).value]
        shown = {(c["x"], c["y"]) for c in obs["camps"]}
        camps = env._state.camps  # the true camps now (the terrain never changes)
        assert shown == {c.position for c in camps if c.position in seen}
        for camp in camps:
            symbol = obs["map"][SIZE - 1 - camp.position[1]][camp.position[0]]
            if camp.position not in seen:
                assert symbol == "?"
            else:  # squads may stand on the open ground an eliminated camp leaves
                assert symbol in ("E" if camp.standing else "xABC*")
        if env.done:
            break
        text, _r, _t, _tr, info = env.step(asyncio.run(agent.act(text, info)).command)
        after = info["observation"]["squads"]
        for old, new in zip(before, after, strict=True):
            if old["status"] == "active":  # a squad sees after moving, before any attack
                seen |= terrain.visible_cells(forest, (new["x"], new["y"]))
        before = after
    assert env.done


# ----- combat --------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    strengths=st.tuples(*[st.integers(1, 4)] * 3),
    near=st.tuples(*[st.booleans()] * 3),
    camp_strength=st.integers(2, 6),
)
def test_combat_arithmetic(
    strengths: tuple[int, ...], near: tuple[bool, ...], camp_strength: int
) -> None:
    camp = (7, 7)
    adjacent_cells = [(6, 7), (7, 8), (8, 7)]
    far_cells = [(2, 2), (3, 2), (2, 3)]
    cells = [a if n else f for a, f, n in zip(adjacent_cells, far_cells, near, strict=True)]
    if not any(near):
        cells[0] = adjacent_cells[0]
        near = (True, *near[1:])
    state = world(list(zip(cells, strengths, strict=True)), [(camp, camp_strength), ((12, 12), 6)])
    attacker = "ABC"[near.index(True)]
    result = rules.step(state, orders(f"{attacker} attack"), 0)
    party = [i for i in range(3) if near[i]]
    total = sum(strengths[i] for i in party)
    kinds = [e["type"] for e in result.events]
    if total > camp_strength:
        assert result.reward == 0.5 and "camp_eliminated" in kinds
        assert not result.state.camps[0].standing
        assert all(s.active for s in result.state.squads)
    else:
        assert result.reward == 0 and "attack_failed" in kinds
        assert result.state.camps[0].standing
        for i, squad in enumerate(result.state.squads):
            assert squad.active == (i not in party)
    event = next(e for e in result.events if e["type"] in ("camp_eliminated", "attack_failed"))
    assert event["strength"] == total and event["camp_strength"] == camp_strength
    assert event["squads"] == ["ABC"[i] for i in party]


def test_squad_moving_in_joins_the_attack_and_stray_attack_does_nothing() -> None:
    state = world([((6, 7), 2), ((5, 7), 2), ((0, 0), 4)], [((7, 7), 3), ((12, 12), 6)])
    # Alone, A (2) would lose to 3; B steps next to the camp in the same step.
    result = rules.step(state, orders("A attack; B east; C attack"), 0)
    kinds = [e["type"] for e in result.events]
    assert kinds.count("camp_eliminated") == 1 and "attack_no_target" in kinds
    assert result.reward == 0.5 and result.state.squads[1].position == (6, 7)
    assert result.state.squads[2].position == (0, 0) and result.state.squads[2].active


def test_nothing_happens_to_a_camp_nobody_attacks() -> None:
    state = world([((6, 7), 1), ((0, 0), 1), ((0, 1), 1)], [((7, 7), 6), ((12, 12), 6)])
    result = rules.step(state, orders("all hold"), 0)
    assert all(s.active for s in result.state.squads) and result.state.camps == state.camps


# ----- simultaneous orders -------------------------------------------------------------


def test_moves_resolve_at_once_and_squads_may_share_cells() -> None:
    grid = field({(5, 6): Terrain.WALL, (6, 5): Terrain.FOREST})
    state = world([((5, 5), 2), ((4, 5), 2), ((0, 0), 1)], [((9, 9), 2), ((12, 12), 2)], grid)
    env = env_with(state)
    _text, _r, _t, _tr, info = env.step("A east; B east; C south")
    events = info["events"]
    assert {
        "type": "blocked",
        "squads": ["A"],
        "at": [5, 5],
        "direction": "east",
        "reason": "forest",
    } in events
    assert {"type": "move", "squads": ["B"], "at": [5, 5], "direction": "east"} in events
    assert {
        "type": "blocked",
        "squads": ["C"],
        "at": [0, 0],
        "direction": "south",
        "reason": "edge",
    } in events
    obs = info["observation"]
    assert obs["map"][SIZE - 1 - 5][5] == "*"  # A and B share (5,5)
    _text, _r, _t, _tr, info = env.step("A north; B west")
    assert info["events"][0]["reason"] == "wall" and info["observation"]["squads"][1]["x"] == 4
    # A camp blocks movement into its cell.
    state = world([((8, 9), 2), ((0, 0), 1), ((0, 1), 1)], [((9, 9), 2), ((12, 12), 2)])
    result = rules.step(state, orders("A east"), 0)
    assert result.events[0]["reason"] == "camp" and result.state.squads[0].position == (8, 9)


def test_swap_through_each_other_and_unordered_squads_hold() -> None:
    state = world([((5, 5), 2), ((6, 5), 2), ((0, 0), 1)], [((9, 9), 2), ((12, 12), 2)])
    result = rules.step(state, orders("A east; B west"), 0)
    assert [s.position for s in result.state.squads] == [(6, 5), (5, 5), (0, 0)]
    assert {"type": "hold", "squads": ["C"], "at": [0, 0]} in result.events


def test_orders_for_destroyed_squads_are_reported_and_others_still_act() -> None:
    state = world([((5, 5), 2), ((6, 5), 2), ((0, 0), 1)], [((9, 9), 2), ((12, 12), 2)])
    state = ReconState(
        state.terrain,
        (state.squads[0], Squad("B", (6, 5), 2, active=False), state.squads[2]),
        state.camps,
        state.seen,
    )
    env = env_with(state)
    text, _r, _t, _tr, info = env.step("A north; B north; C east")
    assert not info["invalid_action"]
    assert {"type": "order_ignored", "squads": ["B"], "reason": "destroyed"} in info["events"]
    assert "Order for B ignored: squad B is destroyed." in text
    assert info["observation"]["squads"][0]["y"] == 6 and info["observation"]["squads"][2]["x"] == 1
    assert "B  destroyed" in text and info["valid_commands"][0].startswith("A ")
    assert all(not f.startswith("B ") for f in info["valid_commands"])
    _text, _r, _t, _tr, info = env.step("all hold")  # `all` skips destroyed squads quietly
    assert all(e["type"] == "hold" for e in info["events"])


# ----- termination and rewards ---------------------------------------------------------


def test_both_camps_falling_terminates_with_success() -> None:
    state = world([((6, 7), 4), ((11, 12), 4), ((0, 0), 1)], [((7, 7), 3), ((12, 12), 3)])
    env = env_with(state)
    text, reward, terminated, truncated, info = env.step("A attack; B attack")
    assert reward == 1.0 and terminated and not truncated and info["success"]
    assert info["observation"]["status"] == "won" and info["observation"]["eliminated"] == 2
    assert "Mission complete" in text


def test_all_squads_destroyed_terminates_without_success() -> None:
    state = world([((6, 7), 1), ((7, 8), 1), ((8, 7), 1)], [((7, 7), 3), ((12, 12), 3)])
    env = env_with(state)
    text, reward, terminated, truncated, info = env.step("A attack")
    assert reward == 0 and terminated and not truncated and not info["success"]
    assert info["observation"]["total_strength"] == 0 and "Mission failed" in text


def test_step_budget_truncates_at_forty() -> None:
    env = textenvs.make("squad-recon")
    env.reset(seed=5)
    for i in range(40):
        _text, reward, terminated, truncated, info = env.step("all hold")
        assert reward == 0 and not terminated
        assert truncated == (i == 39)
    assert info["steps_left"] == 0 and info["observation"]["status"] == "out_of_steps"


@pytest.mark.parametrize("seed", range(8))
def test_rewards_sum_to_half_per_eliminated_camp(seed: int) -> None:
    for agent_name in ("scripted", "random"):
        result = play("squad-recon", agent_name, seed)
        eliminated = sum(e["type"] == "camp_eliminated" for t in result.turns for e in t.events)
        assert result.total_reward == pytest.approx(0.5 * eliminated) and eliminated <= 2
        assert all(t.reward in (0.0, 0.5, 1.0) for t in result.turns)
        assert result.success == (eliminated == 2)


def test_report_is_not_repeated_after_a_wasted_turn() -> None:
    env = textenvs.make("squad-recon")
    env.reset(seed=0)
    text, *_ = env.step("A east")
    assert text.startswith("Last step:\n  A moved east")
    text, *_rest, info = env.step("D north")
    assert info["invalid_action"] and "unknown squad 'D'" in text and "Last step" not in text


# ----- parser --------------------------------------------------------------------------

N, S, E, W, H, X = Order.NORTH, Order.SOUTH, Order.EAST, Order.WEST, Order.HOLD, Order.ATTACK


@pytest.mark.parametrize(
    "text,expected",
    [
        ("A north; B east; C attack", {"A": N, "B": E, "C": X}),
        ("a n, b e, c s", {"A": N, "B": E, "C": S}),
        ("A: MoveNorth | B -> HoldPosition and C AttackEnemyCamp", {"A": N, "B": H, "C": X}),
        ("squad a move_north; Bravo: go west", {"A": N, "B": W}),
        ("Action: **A north; B west**", {"A": N, "B": W}),
        ("I'll push forward.\n\nAction: `A north; C hold`", {"A": N, "C": H}),
        (
            "Send A north while Charlie holds position... no, C attack.\nOrders: A north; C attack",
            {"A": N, "C": X},
        ),
        ("<think>B east? maybe B west</think> B north", {"B": N}),
        ("A north; A north", {"A": N}),
        ("all hold", {"A": H, "B": H, "C": H}),
        ("hold", {"A": H, "B": H, "C": H}),
        ("all squads attack; A attack", {"A": X, "B": X, "C": X}),
        # the Action line is authoritative: the bold text after it is not read (a line
        # below it that is by itself a command rejects the reply: see the corpus)
        ("Action: A north\n**A south would be blocked**", {"A": N}),
    ],
)
def test_parser_reads_orders(text: str, expected: dict[str, Order]) -> None:
    parsed = parsing.parse(text)
    assert {name: parsed.order_for(name) for name in expected} == expected
    for name in set("ABC") - set(expected):
        assert parsed.order_for(name) is None


@pytest.mark.parametrize(
    "text,needle",
    [
        ("A north; A east", "squad A is given two different orders"),
        ("Action: A north\nAction: A south", "two different orders"),
        ("all north; B east", "squad B is given two different orders"),
        ("all north; all south", "two different orders for all squads"),
        ("D north", "unknown squad 'D'"),
        ("Move squad d north please", "unknown squad 'D'"),
        ("squad delta east", "unknown squad 'DELTA'"),
        ("anorth", "no orders found"),
        ("the weather is fine", "no orders found"),
        ("A nroth", "is not an order"),
    ],
)
def test_parser_errors(text: str, needle: str) -> None:
    with pytest.raises(ParseError, match=needle):
        parsing.parse(text)


def test_errors_suggest_spellings() -> None:
    with pytest.raises(ParseError) as info:
        parsing.parse("A nroth")
    assert "'north'" in info.value.message


@settings(max_examples=200, deadline=None)
@given(choice=st.lists(st.sampled_from([None, *Order]), min_size=3, max_size=3))
def test_canonical_and_structured_commands_round_trip(choice: list[Order | None]) -> None:
    env = textenvs.make("squad-recon")
    given_orders = tuple((n, o) for n, o in zip("ABC", choice, strict=True) if o is not None)
    expected = Orders(given_orders)
    if not given_orders:
        expected = Orders(tuple((n, H) for n in "ABC"), everyone=H)
    assert parsing.parse(Orders(given_orders).to_command()) == expected
    args = {n.lower(): o.value for n, o in given_orders}
    assert parsing.parse(env.command_for(args)) == expected


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ABCabcDnorthsuewaklp ;:,*`\n-_>")), max_size=60))
def test_parser_fuzz_only_raises_parse_error(text: str) -> None:
    try:
        result = parsing.parse(text)
    except ParseError as exc:
        assert exc.message
    else:
        assert isinstance(result, Orders)
        assert len({n for n, _ in result.orders}) == len(result.orders)


def test_random_command_orders_each_active_squad_uniformly() -> None:
    env = textenvs.make("squad-recon")
    _text, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    seen = {name: set() for name in "ABC"}
    for _ in range(200):
        parsed = env.parse(env.random_command(info, rng))
        assert [n for n, _ in parsed.orders] == ["A", "B", "C"]
        for name, order in parsed.orders:
            seen[name].add(order)
    assert all(orders_seen == set(Order) for orders_seen in seen.values())


# ----- agents, goldens, CLI ------------------------------------------------------------


def test_scripted_never_loses_an_attack_and_beats_random() -> None:
    scripted = [play("squad-recon", "scripted", seed) for seed in range(20)]
    randoms = [play("squad-recon", "random", seed) for seed in range(20)]
    for result in scripted:
        assert not any(e["type"] == "attack_failed" for t in result.turns for e in t.events)
        assert result.invalid_actions == 0
    assert sum(r.success for r in scripted) >= 8
    assert sum(r.total_reward for r in scripted) > 3 * sum(r.total_reward for r in randoms)


@pytest.mark.parametrize("agent_name,seed", [("scripted", 0), ("scripted", 2), ("random", 4)])
def test_golden_transcripts(agent_name: str, seed: int) -> None:
    assert_golden(
        f"squad-recon-{agent_name}-{seed}", render_transcript(play("squad-recon", agent_name, seed))
    )


def test_golden_commands_transcript() -> None:
    """Errors, destroyed-squad orders and prose replies, as the agent sees them."""
    env = textenvs.make("squad-recon")
    text, _info = env.reset(seed=9)
    parts = [text]
    for command in [
        "A north; A east",
        "Squad D, move north!",
        "I'll spread out.\nAction: A east; B east; C north",
        "**all north**",
        "hold",
    ]:
        text, *_rest = env.step(command)
        parts += [f"> {command}", text]
    assert_golden("squad-recon-commands", "\n\n".join(parts) + "\n")


@pytest.mark.parametrize("agent_name", ["scripted", "random"])
def test_cli_run(agent_name: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "textenvs.cli",
            "run",
            "squad-recon",
            "--agent",
            agent_name,
            "--seed",
            "3",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Squad Reconnaissance and Elimination" in done.stdout and "Tactical map" in done.stdout


def test_cli_play_reads_typed_orders() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "textenvs.cli", "play", "squad-recon", "--seed", "1"],
        input="A east; B north\nquit\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "A moved east to (1,0)" in done.stdout
