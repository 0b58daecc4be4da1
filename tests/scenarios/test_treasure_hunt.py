"""Treasure Hunt: rules, observation, parser, scripted agent, golden transcripts."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import textenvs
from tests.conftest import assert_golden, play, render_transcript
from textenvs.core.parsing import ParseError
from textenvs.scenarios.treasure_hunt import rules
from textenvs.scenarios.treasure_hunt.state import Action, Icon, TreasureState

COMMANDS = ["north", "south", "east", "west", "reveal", "wait"]


def board(bomb: tuple[int, int], flowers: list[tuple[int, int]]) -> TreasureState:
    icons = [[Icon.EMPTY] * 8 for _ in range(8)]
    icons[bomb[1]][bomb[0]] = Icon.BOMB
    for x, y in flowers:
        icons[y][x] = Icon.FLOWER
    return TreasureState(tuple(map(tuple, icons)), frozenset({(0, 0)}), (0, 0))


def env_with(state: TreasureState) -> textenvs.core.TextEnv:
    env = textenvs.make("treasure-hunt")
    env.reset(seed=0)
    env._state = state
    return env


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_initial_counts_and_start(seed: int) -> None:
    state = rules.initial_state(np.random.default_rng(seed))
    counts = Counter(icon for row in state.icons for icon in row)
    assert counts == {Icon.EMPTY: 53, Icon.FLOWER: 10, Icon.BOMB: 1}
    assert state.position == (0, 0) and state.icon((0, 0)) is Icon.EMPTY
    assert state.revealed == {(0, 0)}


def test_bomb_and_flowers_cover_every_other_tile() -> None:
    """Placement is uniform over the 63 non-start tiles: every one gets used."""
    bombs, flowers = Counter(), Counter()
    for seed in range(3000):
        state = rules.initial_state(np.random.default_rng(seed))
        for y in range(8):
            for x in range(8):
                bombs[(x, y)] += state.icons[y][x] is Icon.BOMB
                flowers[(x, y)] += state.icons[y][x] is Icon.FLOWER
    assert bombs[(0, 0)] == flowers[(0, 0)] == 0
    assert len([c for c in bombs if bombs[c]]) == 63
    assert min(flowers[c] for c in flowers if c != (0, 0)) > 0


def test_boundary_bump_costs_a_step_and_stays() -> None:
    env = env_with(board((7, 7), []))
    text, reward, terminated, truncated, info = env.step("south")
    assert text.startswith("Last command: south - blocked by the edge of the grid")
    assert info["observation"]["x"] == 0 and info["observation"]["y"] == 0
    assert info["events"] == [{"type": "bump", "direction": "south", "at": [0, 0]}]
    assert info["steps_left"] == 29 and reward == 0 and not (terminated or truncated)
    _, _, _, _, info = env.step("west")
    assert info["steps_left"] == 28 and info["events"][0]["type"] == "bump"


def test_stepping_reveals_then_takes_effect() -> None:
    env = env_with(board((7, 7), [(2, 0)]))
    _, _, _, _, info = env.step("east")
    assert info["events"][0] == {"type": "reveal", "at": [1, 0], "icon": "empty"}
    assert info["observation"]["window"][2][2] == "empty"
    assert info["observation"]["window"][2][1] == "empty"  # the start tile, west of us
    assert info["observation"]["window"][2][3] == "unseen"
    text, reward, terminated, truncated, info = env.step("east")
    assert terminated and not truncated and reward == 0 and not info["success"]
    assert info["observation"]["standing_on"] == "flower"
    assert "Flower" in text and "EPISODE OVER" in text


def test_bomb_gives_one_only_by_stepping_on_it() -> None:
    env = env_with(board((0, 2), []))
    assert env.step("reveal")[1] == 0
    _, reward, terminated, _, info = env.step("north")
    assert reward == 0 and not terminated
    _, reward, terminated, truncated, info = env.step("north")
    assert reward == 1 and terminated and not truncated and info["success"]
    assert info["observation"]["status"] == "found_treasure"


def test_budget_runs_out_after_thirty_steps() -> None:
    env = env_with(board((7, 7), []))
    for step in range(1, 31):
        _, reward, terminated, truncated, info = env.step("wait")
        assert reward == 0 and not terminated
        assert truncated == (step == 30)
        assert info["steps_left"] == 30 - step
    assert info["observation"]["status"] == "out_of_steps"


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    commands=st.lists(st.sampled_from(COMMANDS), min_size=1, max_size=30),
)
def test_invariants_under_random_play(seed: int, commands: list[str]) -> None:
    env = textenvs.make("treasure-hunt")
    env.reset(seed=seed)
    visited = {(0, 0)}
    for n, command in enumerate(commands, start=1):
        _, reward, terminated, truncated, info = env.step(command)
        obs, state = info["observation"], env._state
        position = (obs["x"], obs["y"])
        visited.add(position)
        assert 0 <= obs["x"] < 8 and 0 <= obs["y"] < 8
        assert state.revealed == visited  # only stepping reveals
        assert info["steps_left"] == 30 - n
        icon = state.icon(position)
        assert terminated == (icon is not Icon.EMPTY)
        assert reward == (1.0 if icon is Icon.BOMB else 0.0)
        # The window shows exactly the revealed tiles, nothing hidden.
        for r, row in enumerate(obs["window"]):
            for c, cell in enumerate(row):
                x, y = obs["x"] - 2 + c, obs["y"] + 2 - r
                if not (0 <= x < 8 and 0 <= y < 8):
                    assert cell == "outside"
                elif (x, y) in visited:
                    assert cell == state.icon((x, y)).value
                else:
                    assert cell == "unseen"
        if terminated or truncated:
            break


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("north", Action.NORTH),
        ("N", Action.NORTH),
        ("MoveNorth", Action.NORTH),
        ("move_north", Action.NORTH),
        ("  **East**  ", Action.EAST),
        ("I will go west now.", Action.WEST),
        ("Let me think.\n\nAction: `south`", Action.SOUTH),
        ("<think>north or south?</think>east", Action.EAST),
        ("Reveal", Action.REVEAL),
        ("WAIT!", Action.WAIT),
        ("ｎｏｒｔｈ", Action.NORTH),  # full-width letters fold to ASCII
        ("The north is unknown and so is everything. Action: north", Action.NORTH),
    ],
)
def test_parser_accepts(text: str, action: Action) -> None:
    assert textenvs.make("treasure-hunt").parse(text) == action


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("north then east", "2 different commands"),
        ("Action: north\nAction: south", "marked parts"),
        ("nrth", "Did you mean: 'north'"),
        ("it's a trap", "no command found"),
        ("jump", "no command found"),
    ],
)
def test_parser_rejects_with_reason(text: str, fragment: str) -> None:
    with pytest.raises(ParseError) as caught:
        textenvs.make("treasure-hunt").parse(text)
    assert fragment in caught.value.message
    assert any(form.startswith("north") for form in caught.value.valid)


def test_invalid_command_observation_explains() -> None:
    env = textenvs.make("treasure-hunt")
    env.reset(seed=4)
    text, *_ = env.step("fly away")
    assert text.startswith("Invalid command: no command found in 'fly away'.")
    assert "Valid commands: north (n, move north" in text


def test_scripted_agent_never_bumps_or_revisits() -> None:
    for seed in range(200):
        result = play("treasure-hunt", "scripted", seed)
        positions = [tuple(e["to"]) for t in result.turns for e in t.events if e["type"] == "move"]
        assert len(positions) == result.steps  # every step moved
        assert len(set(positions)) == len(positions) and (0, 0) not in positions
        assert result.outcome in ("success", "failure", "timeout")


@pytest.mark.slow
def test_scripted_agent_matches_the_ceiling() -> None:
    """Best possible is 1/11 * (1 - C(52,30)/C(63,30)) ~= 0.0909; over 1,000 seeds the
    sweep must land within sampling error of it, and beat random play."""
    scripted = sum(play("treasure-hunt", "scripted", s).success for s in range(1000))
    random = sum(play("treasure-hunt", "random", s).success for s in range(1000))
    assert 0.065 <= scripted / 1000 <= 0.12
    assert scripted > random


@pytest.mark.parametrize("seed", [2, 9])  # a trap after 6 steps, the treasure after 7
def test_golden_transcripts(seed: int) -> None:
    result = play("treasure-hunt", "scripted", seed)
    assert_golden(f"treasure-hunt-{seed}", render_transcript(result))


def test_golden_transcript_with_bumps_and_bad_commands() -> None:
    env = textenvs.make("treasure-hunt")
    parts = [env.reset(seed=5)[0]]
    for command in ["south", "reveal", "wait", "fly", "north and east", "N", "**east**"]:
        text, reward, *_ = env.step(command)
        parts += [f"> {command}   [reward {reward:+g}]", text]
    assert_golden("treasure-hunt-commands", "\n\n".join(parts) + "\n")
