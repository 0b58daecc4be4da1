"""EM Anomaly: world generation, field and shielding, rules, observation, parser, agents."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest

import textenvs
from tests.conftest import assert_golden, play, render_transcript
from textenvs.core.parsing import ParseError
from textenvs.scenarios.em_anomaly import render, rules
from textenvs.scenarios.em_anomaly.parse import parse
from textenvs.scenarios.em_anomaly.state import (
    SIZE,
    STEP_BUDGET,
    WALLS,
    Action,
    EMState,
    Facing,
)

ENV = "em-anomaly"
SEEDS = range(300)


def _state(seed: int) -> EMState:
    return rules.initial_state(np.random.default_rng(seed))


def _world(walls: set[tuple[int, int]], node: tuple[int, int], at: tuple[int, int]) -> EMState:
    """A hand-made world (not necessarily 45 walls) for rule checks."""
    frozen = frozenset(walls)
    return EMState(frozen, node, rules.compute_field(frozen, node), at, Facing.NORTH)


def _flood(walls: frozenset[tuple[int, int]]) -> int:
    """Free tiles reachable from the first free tile (an independent flood fill)."""
    free = {(x, y) for x in range(SIZE) for y in range(SIZE)} - walls
    stack, seen = [min(free)], {min(free)}
    while stack:
        x, y = stack.pop()
        for nxt in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if nxt in free and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return len(seen)


# ----- world generation ---------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_walls_are_20_percent_and_free_tiles_connected(seed: int) -> None:
    state = _state(seed)
    assert len(state.walls) == WALLS == 45
    assert _flood(state.walls) == SIZE * SIZE - WALLS
    assert state.node not in state.walls and state.position not in state.walls


def test_generation_is_seeded_and_varies() -> None:
    assert _state(4) == _state(4)
    assert len({(_state(s).walls, _state(s).node) for s in range(20)}) == 20


@pytest.mark.parametrize("seed", range(5))
def test_constructive_fallback_is_valid_when_every_draw_fails(seed: int) -> None:
    walls = rules.generate_walls(np.random.default_rng(seed), tries=0)
    assert len(walls) == WALLS and _flood(walls) == SIZE * SIZE - WALLS


def test_validate_rejects_a_split_lab() -> None:
    state = _state(0)
    corner = frozenset({(1, 0), (0, 1)})  # cuts (0, 0) off
    walls = frozenset(list(state.walls - corner - {(0, 0)})[: WALLS - 2]) | corner
    broken = replace(state, walls=walls, field=rules.compute_field(walls, state.node))
    if broken.node in walls or broken.position in walls:
        broken = replace(broken, node=(5, 5), position=(5, 5))
    with pytest.raises(rules.LayoutError, match="connected"):
        rules.validate(broken)


# ----- the field and its shielding ----------------------------------------------------


def _reference_level(state: EMState, tile: tuple[int, int]) -> int:
    """The formula, lit only along some monotone path of free tiles (spelled out)."""
    (nx, ny), (tx, ty) = state.node, tile
    dx, dy = tx - nx, ty - ny
    d = abs(dx) + abs(dy)
    if tile in state.walls or d > 2:
        return 0
    steps = [(int(np.sign(dx)), 0)] * abs(dx) + [(0, int(np.sign(dy)))] * abs(dy)
    for order in set(itertools.permutations(steps)):
        x, y = nx, ny
        path_ok = True
        for sx, sy in order:
            x, y = x + sx, y + sy
            path_ok = path_ok and (x, y) not in state.walls
        if path_ok:
            return max(0, 3 - d)
    return 0


@pytest.mark.parametrize("seed", range(60))
def test_field_is_the_formula_with_shielding(seed: int) -> None:
    state = _state(seed)
    for x in range(SIZE):
        for y in range(SIZE):
            assert state.level((x, y)) == _reference_level(state, (x, y)), (x, y)
    assert state.level(state.node) == 3


def test_shielding_by_hand() -> None:
    node = (7, 7)
    open_lab = _world(set(), node, (0, 0))
    assert open_lab.level((9, 7)) == 1 and open_lab.level((8, 8)) == 1
    assert open_lab.level((10, 7)) == 0  # distance 3
    walled = _world({(8, 7)}, node, (0, 0))
    assert walled.level((9, 7)) == 0  # straight behind the wall: shadow
    assert walled.level((8, 8)) == 1  # still reached around the corner via (7, 8)
    boxed = _world({(8, 7), (7, 8)}, node, (0, 0))
    assert boxed.level((8, 8)) == 0  # both shortest paths cross a wall
    assert boxed.level((8, 6)) == 1 and boxed.level((6, 7)) == 2
    assert boxed.level((8, 7)) == 0  # a wall reads 0


@pytest.mark.parametrize("seed", range(100))
def test_readings_climb_towards_the_node(seed: int) -> None:
    """Every tile reading 1 or 2 has an orthogonal neighbour reading one more."""
    state = _state(seed)
    for x in range(SIZE):
        for y in range(SIZE):
            level = state.level((x, y))
            if level in (1, 2):
                around = [state.level(n) for n in rules.neighbours((x, y))]
                assert level + 1 in around


# ----- rules --------------------------------------------------------------------------


def test_moves_blocked_moves_and_facing() -> None:
    state = _world({(5, 6)}, (10, 10), (5, 5))
    moved = rules.step(state, Action.EAST, 0)
    assert moved.state.position == (6, 5) and moved.state.facing is Facing.EAST
    assert moved.events == ({"type": "move", "direction": "east"},)
    blocked = rules.step(state, Action.NORTH, 0)
    assert blocked.state.position == (5, 5) and blocked.state.facing is Facing.NORTH
    assert blocked.state.last_result == "blocked_by_wall" and not blocked.terminated
    corner = _world(set(), (10, 10), (0, 0))
    edge = rules.step(corner, Action.WEST, 3)
    assert edge.state.position == (0, 0) and edge.state.last_result == "blocked_by_edge"
    text = render.render(render.observe(edge.state, 4))
    assert "BLOCKED by the edge of the lab" in text
    text = render.render(render.observe(blocked.state, 1))
    assert "BLOCKED by an insulating wall" in text


@pytest.mark.parametrize("seed", range(10))
def test_rotation_changes_only_the_facing_and_costs_a_step(seed: int) -> None:
    env = textenvs.make(ENV)
    _text, info = env.reset(seed=seed)
    before = env._state
    order = ["north", "east", "south", "west"]
    for command, turn in (("rotate right", 1), ("rotate left", -1)):
        start = env._state
        _text, reward, terminated, _trunc, after = env.step(command)
        state = env._state
        assert state.facing == order[(order.index(start.facing) + turn) % 4]
        assert (state.walls, state.node, state.field, state.position) == (
            before.walls,
            before.node,
            before.field,
            before.position,
        )
        assert after["observation"]["view"] == info["observation"]["view"]
        assert after["steps_left"] == info["steps_left"] - 1
        assert reward == 0 and not terminated
        info = after
    assert env._state.facing == before.facing


@pytest.mark.parametrize(
    ("at", "won"),
    [((7, 7), True), ((7, 8), True), ((6, 7), True), ((8, 8), False), ((7, 9), False)],
)
def test_mark_ends_and_pays_only_within_distance_one(at: tuple[int, int], won: bool) -> None:
    result = rules.step(_world(set(), (7, 7), at), Action.MARK, 5)
    assert result.terminated and result.success is won and result.reward == float(won)
    status = render.observe(result.state, 6).status
    assert status == ("marked_success" if won else "marked_failure")


def test_budget_truncates_after_30_steps_and_mark_on_the_last_step_terminates() -> None:
    env = textenvs.make(ENV)
    env.reset(seed=2)
    for i in range(STEP_BUDGET):
        text, reward, terminated, truncated, info = env.step("rotate left")
        assert reward == 0 and not terminated
        assert truncated == (i == STEP_BUDGET - 1)
    assert info["observation"]["status"] == "out_of_steps" and not info["success"]
    assert "no steps left" in text
    env.reset(seed=2)
    for _ in range(STEP_BUDGET - 1):
        env.step("rotate right")
    _text, _reward, terminated, truncated, _info = env.step("mark")
    assert terminated and not truncated


# ----- observation: nothing absolute leaks --------------------------------------------


def test_observation_has_only_local_fields() -> None:
    _text, info = textenvs.make(ENV).reset(seed=0)
    obs = info["observation"]
    assert set(obs) == {"view", "facing", "steps_left", "last_action", "last_result", "status"}
    assert len(obs["view"]) == 3 and all(len(row) == 3 for row in obs["view"])


def test_same_neighbourhood_anywhere_gives_the_same_text_and_observation() -> None:
    """Shifting the whole situation across the lab changes nothing the agent sees."""
    commands = [Action.NORTH, Action.ROTATE_LEFT, Action.EAST, Action.SOUTH, Action.SOUTH]
    seen = []
    for shift in ((0, 0), (6, 4)):
        walls = {(3 + shift[0], 6 + shift[1])}
        state = _world(walls, (3 + shift[0], 3 + shift[1]), (4 + shift[0], 5 + shift[1]))
        trace = []
        for index, action in enumerate(commands):
            result = rules.step(state, action, index)
            state = result.state
            obs = render.observe(state, index + 1)
            trace.append((render.render(obs), obs.model_dump(), result.events))
        seen.append(trace)
    assert seen[0] == seen[1]
    assert any("2" in text for text, _obs, _events in seen[0])  # the field was in view


@pytest.mark.parametrize("seed", range(5))
def test_no_coordinates_in_text_info_or_events(seed: int) -> None:
    result = play(ENV, "random", seed)
    env = textenvs.make(ENV)
    env.reset(seed=seed)
    state = env._state
    secrets = [f"{a}, {b}" for a, b in (state.node, state.position)]
    secrets += [f"{a},{b}" for a, b in (state.node, state.position)]
    for turn in result.turns:
        for secret in secrets:
            assert secret not in turn.observation
        assert not any(ch.isdigit() for ch in json.dumps(turn.events))
    assert "x=" not in result.final_observation and "y=" not in result.final_observation


# ----- parser ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("n", Action.NORTH),
        ("MoveNorth", Action.NORTH),
        ("move_south", Action.SOUTH),
        ("E", Action.EAST),
        ("**west**", Action.WEST),
        ("RotateLeft", Action.ROTATE_LEFT),
        ("I will turn right now.", Action.ROTATE_RIGHT),
        ("rotate right", Action.ROTATE_RIGHT),
        ("The field reads 2 here.\nAction: mark", Action.MARK),
        ("Mark", Action.MARK),
    ],
)
def test_parser_accepts_aliases(text: str, action: Action) -> None:
    assert parse(text) is action


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("left", "'rotate left' or 'west'"),
        ("Turn", "'rotate left' or 'rotate right'"),
        ("blah", "no command"),
        ("rotate left, then mark", "different commands"),
        ("nrth", "north"),
        ("", "empty"),
    ],
)
def test_parser_errors_say_what_is_wrong(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as caught:
        parse(text)
    assert reason in caught.value.message
    assert any(form.startswith("rotate left") for form in caught.value.valid)


def test_random_command_is_well_formed() -> None:
    env = textenvs.make(ENV)
    _text, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    commands = {env.random_command(info, rng) for _ in range(200)}
    assert commands == {a.value for a in Action}


# ----- agents -----------------------------------------------------------------------------


def test_scripted_agent_beats_random_never_bumps_and_never_beats_the_oracle() -> None:
    env = textenvs.make(ENV)
    scripted = random = 0
    for seed in range(30):
        result = play(ENV, "scripted", seed)
        env.reset(seed=seed)
        if result.success:
            assert rules.oracle_steps(env._state) is not None
            assert result.steps >= rules.oracle_steps(env._state)
        # Its own map (dead reckoning) knows every wall it has seen.
        assert not any(e["type"] == "blocked" for t in result.turns for e in t.events)
        assert result.invalid_actions == 0
        scripted += result.success
        random += play(ENV, "random", seed).success
    assert scripted >= 10 and scripted > 3 * random


def test_scripted_agent_marks_as_soon_as_the_field_reads_two() -> None:
    for seed in range(30):
        result = play(ENV, "scripted", seed)
        for turn in result.turns:
            here = turn.observation.split("Field here:")[1].split()[0]
            assert (turn.command == "mark") == (here in "23") or turn == result.turns[-1]


# ----- golden transcripts -------------------------------------------------------------------


@pytest.mark.parametrize(("agent", "seed"), [("scripted", 3), ("random", 1)])
def test_golden_transcript(agent: str, seed: int) -> None:
    assert_golden(f"em-anomaly-{agent}-{seed}", render_transcript(play(ENV, agent, seed)))


def test_golden_commands_blocked_invalid_and_rotation() -> None:
    """Seed 1 starts with a wall to the east: a blocked move, an unreadable reply, a turn."""
    env = textenvs.make(ENV)
    text, _info = env.reset(seed=1)
    parts = [text]
    for command in ["east", "left", "rotate left", "MoveNorth", "Action: **mark**"]:
        text, reward, terminated, truncated, info = env.step(command)
        parts += [f"> {command}", text]
    assert info["events"] == [{"type": "mark", "success": False}] and terminated
    assert "BLOCKED by an insulating wall" in parts[2]
    parts.append(f"reward={reward:g} terminated={terminated} truncated={truncated}")
    assert_golden("em-anomaly-commands", "\n\n".join(parts) + "\n")
