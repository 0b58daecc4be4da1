"""Magnetic Field: the rule, encoding, decoration, levels, decodability, rewards, limit,
feedback, parser, agents, golden transcripts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from itertools import product

import httpx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import textenvs
from benchmarks import magnetic_field_baselines
from tests.conftest import assert_golden, play, render_transcript, transcript_digest
from textenvs.agents.scripted.magnetic_field import decode as scripted_decode
from textenvs.agents.scripted.magnetic_field_lookup import (
    MagneticFieldLookupAgent,
    lookup_message,
)
from textenvs.core.parsing import ParseError
from textenvs.episodes.loop import run_episode
from textenvs.scenarios.magnetic_field import rules
from textenvs.scenarios.magnetic_field.state import (
    BAND_ROWS,
    GUTTER_ROWS,
    HEX,
    LEVELS,
    WINDOWS,
    Action,
    MagneticState,
)
from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread

ENV = "magnetic-field"


def state_for(seed: int, level: int = 0) -> MagneticState:
    return rules.initial_state(np.random.default_rng(seed), level)


def env_at(seed: int = 0, level: int = 0) -> textenvs.core.TextEnv:
    env = textenvs.make(ENV)
    env.reset(seed=seed, options={"level": level})
    return env


def message_text(state: MagneticState) -> str:
    return "".join(HEX[d] for d in state.message)


def observation_for(seed: int, level: int) -> tuple[dict, MagneticState]:
    """What the agent sees at reset, and the hidden state behind it."""
    env = textenvs.make(ENV)
    observation = env.reset(seed=seed, options={"level": level})[1]["observation"]
    return observation, env._state


# ----- the rule ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "bits"),
    [
        ((0, 0, 0, 0), 0b00),
        ((1, 0, 0, 0), 0b10),  # the top row: one cell on a line
        ((0, 1, 0, 0), 0b10),
        ((0, 0, 0, 1), 0b01),  # the bottom row: one cell on a line
        ((1, 0, 0, 1), 0b11),
        ((1, 1, 1, 1), 0b00),  # both cells of each row
        ((2, 1, 0, 2), 0b01),  # an intersection is on a line too
        ((2, 0, 2, 0), 0b11),
        ((0, 2, 1, 1), 0b10),
    ],
)
def test_rule_examples(pattern: tuple[int, int, int, int], bits: int) -> None:
    assert rules.TABLE[pattern] == rules.pattern_value(pattern) == bits


def test_table_covers_every_pattern_and_any_shared_column_allows_every_value() -> None:
    """All 81 patterns; whatever left column a window shares with its neighbour, some right
    column gives each value (so any message can be drawn)."""
    assert len(rules.TABLE) == 81 and set(rules.TABLE.values()) == {0, 1, 2, 3}
    for tl, bl in product(range(3), repeat=2):
        values = {rules.TABLE[(tl, tr, bl, br)] for tr, br in product(range(3), repeat=2)}
        assert values == {0, 1, 2, 3}


def test_the_rule_ignores_what_decoration_draws() -> None:
    """Drawing a crossing on a line, or a line through both empty cells of a row, never
    changes a value: that is all decoration ever does inside a read window."""
    for pattern in rules.TABLE:
        for i in range(4):
            if pattern[i] == 1:
                crossed = (*pattern[:i], 2, *pattern[i + 1 :])
                assert rules.TABLE[crossed] == rules.TABLE[pattern]
        for row in (0, 2):
            if pattern[row] == pattern[row + 1] == 0:
                lined = list(pattern)
                lined[row : row + 2] = [1, 1]
                assert rules.TABLE[tuple(lined)] == rules.TABLE[pattern]


def test_table_is_identical_across_episodes() -> None:
    """Hints from many episodes and levels never disagree, and equal TABLE."""
    seen: dict[str, str] = {}
    for seed in range(300):
        info = textenvs.make(ENV).reset(seed=seed, options={"level": seed % 4})[1]
        for hint in info["observation"]["hints"]:
            assert seen.setdefault(hint["pattern"], hint["bits"]) == hint["bits"]
    assert len(seen) > 60  # many entries seen, all consistent
    for key, bits in seen.items():
        pattern = (int(key[0]), int(key[1]), int(key[3]), int(key[4]))
        assert format(rules.TABLE[pattern], "02b") == bits


# ----- encoding, decoration, levels -----------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), level=st.sampled_from(LEVELS))
def test_grid_encodes_message_and_hints_are_table_entries(seed: int, level: int) -> None:
    state = state_for(seed, level)
    bits = rules.decode(state.grid)
    assert len(bits) == 36 and bits == rules.bit_sequence(state.message)
    assert rules.message_of(bits) == state.message
    assert bits[16:32] == bits[:16]  # the check copy
    assert int("".join(map(str, bits[32:])), 2) == sum(state.message) % 16
    assert all(v in (0, 1, 2) for row in state.grid for v in row)
    assert [p for p, _ in state.hints] == sorted({p for p, _ in state.hints})
    assert all(rules.TABLE[p] == v for p, v in state.hints)
    assert len(state.hints) >= rules.LEVEL_SPECS[level].hint_count


@pytest.mark.slow
def test_decoration_never_changes_a_bit() -> None:
    """Thousands of seeds at every level: the message, the base windows and every decoded
    bit are those of level 0; the only changes are crossings on lines, lines through
    whole empty rows of a window pair, and anything in the unread rows."""
    read_rows = [r + offset for r in BAND_ROWS for offset in (0, 1)]
    for seed in range(2000):
        plain = state_for(seed, 0)
        assert all(set(plain.grid[r]) == {0} for r in GUTTER_ROWS)
        assert all(v in (0, 1) for row in plain.grid for v in row)
        for level in LEVELS[1:]:
            decorated = state_for(seed, level)
            assert decorated.message == plain.message
            assert rules.decode(decorated.grid) == rules.decode(plain.grid)
            for row in read_rows:
                for group in range(0, 9, 3):
                    before = plain.grid[row][group : group + 3]
                    after = decorated.grid[row][group : group + 3]
                    lined = before == (0, 0, 0) and 0 not in after
                    pairs = zip(before, after, strict=True)
                    crossed = all(a == b or (b, a) == (1, 2) for b, a in pairs)
                    assert lined or crossed, (seed, level, row, before, after)


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


def test_levels_show_fewer_hints_and_break_exact_matching() -> None:
    """Per level over 300 seeds: hints shown, decorated cells, and the share of message
    windows whose pattern (or its check copy's) appears among the hints."""
    hints, changed, matched = Counter(), Counter(), Counter()
    for seed in range(300):
        plain = state_for(seed, 0)
        for level in LEVELS:
            state = state_for(seed, level)
            shown = {p for p, _ in state.hints}
            hints[level] += len(shown)
            changed[level] += sum(
                a != b
                for ra, rb in zip(state.grid, plain.grid, strict=True)
                for a, b in zip(ra, rb, strict=True)
            )
            for k in range(8):
                copies = (rules.window(state.grid, *WINDOWS[j]) for j in (k, k + 8))
                matched[level] += any(p in shown for p in copies)
    assert hints[0] > hints[1] > hints[2] > hints[3]
    assert changed[0] == 0 < changed[1] < changed[2] < changed[3]
    assert matched[0] == 8 * 300  # level 0 hints every window
    assert matched[0] > matched[1] > matched[2] > matched[3]
    assert matched[3] < 0.3 * 8 * 300  # exact lookup fails on most windows at the top


def test_messages_are_spread_over_all_characters() -> None:
    chars = Counter(HEX[d] for s in range(500) for d in state_for(s).message)
    assert set(chars) == set(HEX)


# ----- decodable from the observation, and discriminative ---------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_every_observation_fixes_its_message(level: int) -> None:
    """1,000 seeds per level: the generator's certificate holds, and the scripted agent,
    which induces the rule from the observation alone, reads the true message."""
    for seed in range(1000):
        observation, state = observation_for(seed, level)
        assert rules.undetermined_windows(state.grid, [p for p, _ in state.hints]) == []
        assert scripted_decode(observation) == message_text(state), (seed, level)


def test_scripted_decoding_needs_the_hints() -> None:
    """Without hints the family of candidate rules reads the field many ways: the agent
    says so rather than guess (so it is not reading the true rule from somewhere else)."""
    observation, _ = observation_for(3, 2)
    with pytest.raises(ValueError, match=r"allows \d+ messages, not one"):
        scripted_decode({**observation, "hints": []})


def test_lookup_only_scores_fall_with_the_level() -> None:
    """Exact lookup (guessing unmatched windows) gets everything at level 0 and at most
    half at the top level (400 seeds each; the docs publish 1,000)."""
    means = {}
    for level in LEVELS:
        total = 0
        for seed in range(400):
            observation, state = observation_for(seed, level)
            guess = lookup_message(observation, np.random.default_rng(seed))
            total += sum(a == b for a, b in zip(guess, message_text(state), strict=True))
        means[level] = total / (4 * 400)
    assert means[0] == 1.0
    assert means[0] > means[1] > means[2] > means[3] and means[3] <= 0.5


def test_lookup_agent_plays_only_magnetic_field() -> None:
    result = asyncio.run(
        run_episode(textenvs.make(ENV), MagneticFieldLookupAgent(), 4, options={"level": 0})
    )
    assert result.total_reward == 1.0 and result.steps == 8
    with pytest.raises(ValueError, match="only magnetic-field"):
        asyncio.run(run_episode(textenvs.make("treasure-hunt"), MagneticFieldLookupAgent(), 4))


def test_baselines_benchmark_prints_every_agent_at_every_level(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["bench", "--seeds", "2"])
    magnetic_field_baselines.main()
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    played = {(r[0], r[1]): r[2] for r in rows if len(r) == 5 and r[0] in "0123"}
    assert set(played) == {(str(lv), a) for lv in LEVELS for a in ("scripted", "lookup", "random")}
    assert all(played[(str(lv), "scripted")] == "1.000" for lv in LEVELS)


# ----- strict level -----------------------------------------------------------------------------

BAD_LEVELS = [2.7, 1.0, True, False, "2", None, 4, -1, [1]]


def test_level_option_kwarg_and_bad_options() -> None:
    assert textenvs.make(ENV, level=2).reset(seed=1)[1]["observation"]["level"] == 2
    env = textenvs.make(ENV, level=2)
    assert env.reset(seed=1, options={"level": 3})[1]["observation"]["level"] == 3
    assert env.reset(seed=1, options={"level": np.int64(1)})[1]["observation"]["level"] == 1
    for bad in BAD_LEVELS:
        message = f"level must be one of (0, 1, 2, 3), not {bad!r}"
        with pytest.raises(ValueError) as caught:
            env.reset(seed=1, options={"level": bad})
        assert str(caught.value) == message
        with pytest.raises(ValueError, match="level must be one of"):
            textenvs.make(ENV, level=bad)
    with pytest.raises(ValueError, match="only the option 'level'"):
        env.reset(seed=1, options={"size": 3})


@pytest.mark.parametrize("value", ["2.7", "true", '"2"', "4"])
def test_cli_rejects_a_bad_level_in_one_line(value: str) -> None:
    command = ["run", ENV, "--agent", "random", "--seed", "1", "--env-option", f"level={value}"]
    done = subprocess.run(
        [sys.executable, "-m", "textenvs.cli", *command],
        capture_output=True,
        text=True,
        timeout=120,
    )
    shown = repr(json.loads(value))
    assert done.returncode == 2, done.stdout
    assert done.stderr.strip().splitlines() == [
        f"textenvs run: error: level must be one of (0, 1, 2, 3), not {shown}"
    ]


def test_service_rejects_a_bad_level_with_422() -> None:
    with serve_in_thread(create_app()) as base, httpx.Client(base_url=base, timeout=10) as http:
        for bad in [2.7, True, "2", 4]:
            response = http.post("/v1/sessions", json={"env": ENV, "options": {"level": bad}})
            assert response.status_code == 422, response.text
            error = response.json()["error"]
            assert error["code"] == "invalid_options"
            assert f"level must be one of (0, 1, 2, 3), not {bad!r}" in error["message"]
        made = http.post("/v1/sessions", json={"env": ENV, "seed": 1, "options": {"level": 3}})
        assert made.status_code == 201 and made.json()["info"]["observation"]["level"] == 3


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
    obs = info["observation"]
    assert obs["correct"] == right and obs["message"] == message
    assert obs["slot_right"] == [a == m for a, m in zip(answer, message, strict=True)]
    assert f"{right} of 4 characters right" in text
    for i, (a, m) in enumerate(zip(answer, message, strict=True)):
        mark = "right" if a == m else f"wrong, was {m}"
        assert f"slot {i + 1}: {a or '_'} {mark}" in text


def test_the_final_observation_teaches_the_rule() -> None:
    """The true bits of all 18 windows: pairs with the (shown) field they are learnt from."""
    env = env_at(11, level=3)
    text, *_, info = env.step("submit")
    obs = info["observation"]
    bits = rules.bit_sequence(env._state.message)
    assert obs["window_bits"] == [f"{bits[2 * k]}{bits[2 * k + 1]}" for k in range(18)]
    for k, (row, col) in enumerate(WINDOWS):
        assert (
            format(rules.TABLE[rules.window(env._state.grid, row, col)], "02b")
            == (obs["window_bits"][k])
        )
    bands = [" ".join(obs["window_bits"][k : k + 6]) for k in (0, 6, 12)]
    assert "The true bits of windows 1-18 (one band per group): " + " / ".join(bands) in text
    assert obs["step_index"] == 0 and "Step index: 0 (the last step; 39 left)" in text


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
        assert info["observation"]["step_index"] == step  # the next step's index
    assert info["observation"]["slots"] == [message[0], wrong, None, None]
    assert info["observation"]["cursor"] == 1  # on the wrong slot
    command = f"enter {message[1]}" if last == "fix" else last
    text, reward, terminated, truncated, info = env.step(command)
    assert truncated and not terminated and reward == (0.5 if last == "fix" else 0.25)
    assert info["success"] is False
    assert info["observation"]["status"] == "out_of_steps" and info["steps_left"] == 0
    assert [e["type"] for e in info["events"]][-2:] == ["evaluated", "budget_exhausted"]
    assert info["observation"]["step_index"] == 39  # the last step's: 0-39 as the spec says
    assert "Step index: 39 (the last step; 0 left)" in text and "the steps ran out" in text


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
    assert info["observation"]["step_index"] == 39 and info["steps_left"] == 0


def test_observation_hides_the_message_until_the_end() -> None:
    env = textenvs.make(ENV)
    text, info = env.reset(seed=5)
    obs = info["observation"]
    assert obs["message"] is None and obs["answer"] is None and obs["correct"] is None
    assert obs["slot_right"] is None and obs["window_bits"] is None
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
    for seed in range(100):  # full episodes; the decoding itself is tested on 1,000 seeds
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
