"""Magnetic Field: table, encoding, decoration, rewards, limit, parser, scripted, golden."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import textenvs
from tests.conftest import assert_golden, play, render_transcript, transcript_digest
from textenvs.core.parsing import ParseError
from textenvs.scenarios.magnetic_field import rules
from textenvs.scenarios.magnetic_field.state import (
    GUTTER_ROWS,
    HEX,
    LEVELS,
    WINDOWS,
    Action,
    MagneticState,
)

ENV = "magnetic-field"


def state_for(seed: int, level: int = 0) -> MagneticState:
    return rules.initial_state(np.random.default_rng(seed), level)


def env_at(seed: int = 0, level: int = 0) -> textenvs.core.TextEnv:
    env = textenvs.make(ENV)
    env.reset(seed=seed, options={"level": level})
    return env


# ----- the fixed table --------------------------------------------------------------------


def test_table_is_the_documented_construction() -> None:
    """Every pattern of 0/1/2 has a value; each left column's row is the sha256 ordering
    of its right columns, valued 0,1,2,3,0,1,2,3,L%4 (so it can never drift silently)."""
    assert len(rules.TABLE) == 81 and set(rules.TABLE.values()) == {0, 1, 2, 3}
    for left in range(9):
        order = sorted(
            range(9), key=lambda r: hashlib.sha256(f"magnetic-field:{left}:{r}".encode()).digest()
        )
        for value, right in zip([0, 1, 2, 3, 0, 1, 2, 3, left % 4], order, strict=True):
            tl, bl, tr, br = left // 3, left % 3, right // 3, right % 3
            assert rules.TABLE[(tl, tr, bl, br)] == value
    assert sorted(Counter(rules.TABLE.values()).values()) == [20, 20, 20, 21]


def test_table_is_identical_across_episodes() -> None:
    """Hints from many episodes, levels and processes never disagree, and equal TABLE."""
    seen: dict[str, str] = {}
    for seed in range(300):
        info = textenvs.make(ENV).reset(seed=seed, options={"level": seed % 4})[1]
        for hint in info["observation"]["hints"]:
            assert seen.setdefault(hint["pattern"], hint["bits"]) == hint["bits"]
    assert len(seen) > 60  # many entries seen, all consistent
    for key, bits in seen.items():
        pattern = (int(key[0]), int(key[1]), int(key[3]), int(key[4]))
        assert format(rules.TABLE[pattern], "02b") == bits


# ----- encoding, hints, decoration ---------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), level=st.sampled_from(LEVELS))
def test_grid_encodes_message_and_hints_cover_every_window(seed: int, level: int) -> None:
    state = state_for(seed, level)
    bits = rules.decode(state.grid)
    assert len(bits) == 36 and bits == rules.bit_sequence(state.message)
    assert rules.message_of(bits) == state.message
    assert bits[16:32] == bits[:16]  # the check copy
    assert int("".join(map(str, bits[32:])), 2) == sum(state.message) % 16
    assert all(v in (0, 1, 2) for row in state.grid for v in row)
    hinted = dict(state.hints)
    assert len(hinted) == len(state.hints) == rules.HINT_COUNT
    assert [p for p, _ in state.hints] == sorted(hinted)
    for row, col in WINDOWS:
        pattern = rules.window(state.grid, row, col)
        assert hinted[pattern] == rules.TABLE[pattern]


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), level=st.sampled_from(LEVELS[1:]))
def test_decoration_never_changes_the_message(seed: int, level: int) -> None:
    plain, decorated = state_for(seed, 0), state_for(seed, level)
    assert decorated.message == plain.message and decorated.hints == plain.hints
    assert rules.decode(decorated.grid) == rules.decode(plain.grid)
    for r in range(9):
        if r in GUTTER_ROWS:
            assert set(plain.grid[r]) == {0}
        else:
            assert decorated.grid[r] == plain.grid[r]


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 10_000), fill=st.lists(st.sampled_from([0, 1, 2]), min_size=27, max_size=27)
)
def test_any_gutter_content_decodes_the_same(seed: int, fill: list[int]) -> None:
    state = state_for(seed)
    cells = [list(row) for row in state.grid]
    for i, r in enumerate(GUTTER_ROWS):
        cells[r] = fill[9 * i : 9 * i + 9]
    assert rules.decode(tuple(map(tuple, cells))) == rules.decode(state.grid)


def test_levels_add_more_decoration() -> None:
    counts = {
        level: sum(
            sum(v != 0 for r in GUTTER_ROWS for v in state_for(s, level).grid[r])
            for s in range(200)
        )
        for level in LEVELS
    }
    assert counts[0] == 0 < counts[1] < counts[2] < counts[3]


def test_messages_are_spread_over_all_characters() -> None:
    chars = Counter(HEX[d] for s in range(500) for d in state_for(s).message)
    assert set(chars) == set(HEX)


def test_level_option_kwarg_and_bad_options() -> None:
    assert textenvs.make(ENV, level=2).reset(seed=1)[1]["observation"]["level"] == 2
    env = textenvs.make(ENV, level=2)
    assert env.reset(seed=1, options={"level": 3})[1]["observation"]["level"] == 3
    with pytest.raises(ValueError, match="level"):
        env.reset(seed=1, options={"level": 4})
    with pytest.raises(ValueError, match="only the option 'level'"):
        env.reset(seed=1, options={"size": 3})
    with pytest.raises(ValueError, match="level"):
        textenvs.make(ENV, level=-1)


# ----- steps, rewards, the limit ----------------------------------------------------------


def test_enter_overwrites_and_cursor_wraps() -> None:
    env = env_at(3)
    _, _, _, _, info = env.step("left")
    assert info["observation"]["cursor"] == 3
    assert info["events"] == [{"type": "cursor", "direction": "left", "from": 0, "to": 3}]
    _, _, _, _, info = env.step("7")
    _, _, _, _, info = env.step("enter b")
    assert info["observation"]["slots"] == [None, None, None, "B"]
    assert info["events"][0] == {"type": "enter", "slot": 3, "char": "B", "replaced": "7"}
    assert info["observation"]["cursor"] == 3  # entering does not move the cursor
    _, reward, terminated, truncated, info = env.step("right")
    assert info["observation"]["cursor"] == 0 and reward == 0
    assert not (terminated or truncated) and env._state.grid == state_for(3).grid


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    answer=st.lists(st.one_of(st.none(), st.sampled_from(HEX)), min_size=4, max_size=4),
)
def test_partial_credit_is_exact(seed: int, answer: list[str | None]) -> None:
    env = env_at(seed)
    env._state = replace(env._state, slots=tuple(answer))
    message = "".join(HEX[d] for d in env._state.message)
    right = sum(a == m for a, m in zip(answer, message, strict=True))
    text, reward, terminated, truncated, info = env.step("submit")
    assert reward == 0.25 * right and terminated and not truncated
    assert info["success"] == (right == 4)
    assert info["observation"]["correct"] == right and info["observation"]["message"] == message
    assert f"{right} of 4 characters right" in text


@pytest.mark.parametrize("last", ["right", "nonsense", "fix"])
def test_the_limit_scores_the_current_slots(last: str) -> None:
    env = env_at(8)
    message = "".join(HEX[d] for d in env._state.message)
    wrong = HEX[(HEX.index(message[1]) + 1) % 16]
    for command in [f"enter {message[0]}", "right", f"enter {wrong}", "right"]:
        env.step(command)
    for step in range(5, 40):
        _, reward, terminated, truncated, info = env.step("left" if step % 2 else "right")
        assert reward == 0 and not (terminated or truncated)
        assert info["observation"]["step_index"] == step
    assert info["observation"]["slots"] == [message[0], wrong, None, None]
    assert info["observation"]["cursor"] == 1  # on the wrong slot
    command = f"enter {message[1]}" if last == "fix" else last
    text, reward, terminated, truncated, info = env.step(command)
    assert truncated and not terminated and reward == (0.5 if last == "fix" else 0.25)
    assert info["success"] is False
    assert info["observation"]["status"] == "out_of_steps" and info["steps_left"] == 0
    assert [e["type"] for e in info["events"]][-2:] == ["evaluated", "budget_exhausted"]
    assert "Step index: 40 (all 40 steps used)" in text and "the steps ran out" in text


def test_the_limit_with_the_right_answer_is_a_success() -> None:
    env = env_at(9)
    for i, digit in enumerate(env._state.message):
        env.step(f"enter {HEX[digit]}")
        env.step("right" if i < 3 else "left")
    for _ in range(32):
        _, reward, _, truncated, info = env.step("wait")  # unreadable: a wasted turn
    assert truncated and reward == 1.0 and info["success"]


def test_submit_on_the_last_step_terminates() -> None:
    env = env_at(2)
    for _ in range(39):
        env.step("right")
    _, reward, terminated, truncated, info = env.step("submit")
    assert terminated and not truncated and reward == 0
    assert [e["type"] for e in info["events"]] == ["evaluated"]


def test_observation_hides_the_message_until_the_end() -> None:
    env = textenvs.make(ENV)
    text, info = env.reset(seed=5)
    obs = info["observation"]
    assert obs["message"] is None and obs["answer"] is None and obs["correct"] is None
    assert obs["step_index"] == 0 and obs["slots"] == [None] * 4 and obs["cursor"] == 0
    assert "Step index: 0 (steps 0-39; 40 left)" in text
    assert "Slots: [_]  _   _   _" in text
    message = "".join(HEX[d] for d in env._state.message)
    assert all(h["pattern"] + " -> " + h["bits"] in text for h in obs["hints"])
    assert f"was {message}" not in text


# ----- commands ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("A", Action.HEX_A),
        ("a", Action.HEX_A),
        ("7", Action.HEX_7),
        ("0xF", Action.HEX_F),
        ("enter A", Action.HEX_A),
        ("type 7", Action.HEX_7),
        ("Input digit c", Action.HEX_C),
        ("enter 'e'", Action.HEX_E),
        ("right", Action.RIGHT),
        ("MoveCursorRight", Action.RIGHT),
        ("cursor_left", Action.LEFT),
        ("prev", Action.LEFT),
        ("submit", Action.SUBMIT),
        ("Finalize", Action.SUBMIT),
        ("Action: B", Action.HEX_B),
        ("The windows read 10 11, so B.\n\nAction: `enter B`", Action.HEX_B),
        ("The left window says 01.\nAction: enter 5", Action.HEX_5),
        ("I will enter D now.", Action.HEX_D),
        ("<think>enter 3 or submit?</think>submit", Action.SUBMIT),
        ("All slots are filled, so I submit the answer.", Action.SUBMIT),
        ("I'll submit a final answer", Action.SUBMIT),
        ("ｅｎｔｅｒ　Ａ", Action.HEX_A),
    ],
)
def test_parser_accepts(text: str, action: Action) -> None:
    assert textenvs.make(ENV).parse(text) == action


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("3FA0", "one hex character per command ('3FA0' has 4)"),
        ("enter 3FA0", "one hex character per command"),
        ("Answer: 3FA0", "one hex character per command"),
        ("submit A", "'submit' takes no character"),
        ("I will submit A.", "'submit' takes no character"),
        ("enter G", "'g' is not a hexadecimal digit"),
        ("z", "'z' is not a hexadecimal digit"),
        ("enter", "say which hex character"),
        ("enter 5 then right", "2 different commands"),
        ("Action: right\nAction: left", "marked parts"),
        ("type a message", "no command found"),
        ("put a 5 in", "no command found"),
        ("submti", "Did you mean: 'submit'"),
    ],
)
def test_parser_rejects_with_reason(text: str, fragment: str) -> None:
    with pytest.raises(ParseError) as caught:
        textenvs.make(ENV).parse(text)
    assert fragment in caught.value.message
    assert caught.value.valid[0].startswith("enter X")


def test_every_action_has_a_round_trip() -> None:
    env = textenvs.make(ENV)
    for action in Action:
        assert env.parse(action.command) is action
        short = action.char if action.is_hex else action.command
        assert env.parse(env.command_for({"action": short})) is action


def test_invalid_command_wastes_a_turn_and_explains() -> None:
    env = env_at(4)
    before = env._state
    text, reward, terminated, truncated, info = env.step("submit 3FA0")
    assert env._state == before and reward == 0 and not (terminated or truncated)
    assert text.startswith("Invalid command: one hex character per command")
    assert "Valid commands: enter X" in text and info["steps_left"] == 39


def test_random_agent_samples_the_nineteen_actions_uniformly() -> None:
    env = env_at(0)
    info = env.reset(seed=0)[1]
    rng = np.random.default_rng(0)
    counts = Counter(env.parse(env.random_command(info, rng)) for _ in range(19_000))
    assert set(counts) == set(Action)
    assert all(800 < n < 1200 for n in counts.values())


# ----- agents and golden transcripts -------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_scripted_agent_decodes_every_episode(level: int) -> None:
    for seed in range(250):
        result = play(ENV, "scripted", seed, level=level)
        assert result.total_reward == 1.0 and result.success, (seed, level, result.error)
        assert result.steps <= 8 and result.outcome == "success"


def test_same_seed_same_episode_at_each_level() -> None:
    for level in LEVELS:
        first = transcript_digest(play(ENV, "random", 21, level=level))
        assert first == transcript_digest(play(ENV, "random", 21, level=level))
    assert transcript_digest(play(ENV, "scripted", 21, level=0)) != transcript_digest(
        play(ENV, "scripted", 21, level=3)
    )


@pytest.mark.parametrize(("seed", "level"), [(0, 0), (1, 3)])
def test_golden_transcripts(seed: int, level: int) -> None:
    result = play(ENV, "scripted", seed, level=level)
    assert_golden(f"magnetic-field-{seed}-level{level}", render_transcript(result))


def test_golden_transcript_with_bad_commands() -> None:
    env = textenvs.make(ENV)
    parts = [env.reset(seed=7, options={"level": 1})[0]]
    for command in ["left", "enter 3FA0", "**C**", "submit C", "right", "type 0", "submit"]:
        text, reward, *_ = env.step(command)
        parts += [f"> {command}   [reward {reward:+g}]", text]
    assert_golden("magnetic-field-commands", "\n\n".join(parts) + "\n")
