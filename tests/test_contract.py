"""The environment contract (DESIGN.md), checked on every registered scenario."""

from __future__ import annotations

import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import textenvs
from tests.conftest import ENV_NAMES, play, transcript_digest
from textenvs.agents import make_agent
from textenvs.core.parsing import ParseError
from textenvs.episodes.loop import context_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INFO_KEYS = {
    "observation",
    "valid_commands",
    "invalid_action",
    "error",
    "events",
    "success",
    "steps_used",
    "steps_left",
    "read_as",
}


def test_check_env_through_gymnasium_make(env_name: str) -> None:
    env = gym.make(textenvs.get(env_name).env_id)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_reset_info_and_spaces(env_name: str) -> None:
    env = textenvs.make(env_name)
    text, info = env.reset(seed=0)
    assert env.observation_space.contains(text)
    assert set(info) >= INFO_KEYS
    assert info["steps_left"] == env.max_steps and info["steps_used"] == 0
    assert info["valid_commands"] and not info["invalid_action"] and info["error"] is None


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_random_episodes_end_within_budget_and_stay_in_charset(env_name: str, seed: int) -> None:
    env = textenvs.make(env_name)
    agent = make_agent("random")
    text, info = env.reset(seed=seed)
    agent.reset(context_for(env, seed))
    import asyncio

    for _ in range(env.max_steps):
        command = asyncio.run(agent.act(text, info)).command
        text, _reward, terminated, truncated, info = env.step(command)
        assert env.observation_space.contains(text), text
        assert set(info) >= INFO_KEYS
        if env.observation_model is not None:  # observe() gives dicts: check their shape
            model = env.observation_model.model_validate(info["observation"])
            assert model.model_dump(mode="json") == info["observation"]
        if terminated or truncated:
            break
    assert terminated or truncated
    assert not (terminated and truncated)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(command)


def test_same_seed_same_episode_in_one_process(env_name: str) -> None:
    first = transcript_digest(play(env_name, "random", 11))
    second = transcript_digest(play(env_name, "random", 11))
    assert first == second
    assert first != transcript_digest(play(env_name, "random", 12))


def test_same_seed_same_episode_across_processes_and_hash_seeds() -> None:
    code = (
        "from tests.conftest import play, transcript_digest, ENV_NAMES\n"
        "print(','.join(transcript_digest(play(n, 'random', 5)) for n in ENV_NAMES))"
    )
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            cwd=ROOT,
        )
        outputs.add(done.stdout.strip())
    local = ",".join(transcript_digest(play(n, "random", 5)) for n in ENV_NAMES)
    assert outputs == {local}


def test_interleaved_envs_match_sequential_runs(env_name: str) -> None:
    """16 envs stepped in turn in one process give the same episodes as one at a time."""
    import asyncio

    seeds = list(range(100, 116))
    sequential = {s: transcript_digest(play(env_name, "random", s)) for s in seeds}

    async def all_at_once() -> dict[int, str]:
        from textenvs.episodes.loop import run_episode

        async def one(seed: int) -> tuple[int, str]:
            result = await run_episode(textenvs.make(env_name), _Yielding(), seed)
            return seed, transcript_digest(result)

        return dict(await asyncio.gather(*(one(s) for s in seeds)))

    assert asyncio.run(all_at_once()) == sequential


class _Yielding:
    """The random agent, yielding to the event loop every turn so episodes interleave."""

    name = "random"

    def __init__(self) -> None:
        self._inner = make_agent("random")

    def reset(self, context):  # type: ignore[no-untyped-def]
        self._inner.reset(context)

    async def act(self, observation, info):  # type: ignore[no-untyped-def]
        import asyncio

        await asyncio.sleep(0)
        return await self._inner.act(observation, info)


BAD_COMMANDS = [
    "",
    "   ",
    "\x00\x00\x00",
    "\x1b[31mred\x1b[0m",
    "\ud800 lone surrogate",
    "x" * 1_000_000,
    "north" * 200_000,
    "🙂🙂🙂",
    "\n\n\t",
]


@pytest.mark.parametrize("command", BAD_COMMANDS, ids=range(len(BAD_COMMANDS)))
def test_bad_commands_waste_one_turn(env_name: str, command: str) -> None:
    env = textenvs.make(env_name)
    env.reset(seed=3)
    state = env._state
    # The scenario says what a turn without an action does to its world (by default
    # nothing; a world with its own clock lets that clock run, as after `wait`).
    wasted = env.on_wasted_turn(state, 0)
    text, reward, terminated, _truncated, info = env.step(command)
    assert info["invalid_action"] and info["error"] and info["read_as"] is None
    assert text.startswith("Invalid command: ")
    assert env.observation_space.contains(text)
    assert env._state == wasted.state
    assert reward == wasted.reward and not terminated
    assert info["steps_used"] == 1
    assert info["events"][0] == {"type": "invalid_command"}


@settings(max_examples=150, deadline=None)
@given(command=st.text(max_size=300))
def test_parser_fuzz_never_raises_anything_but_parse_error(command: str) -> None:
    for name in ENV_NAMES:
        env = textenvs.make(name)
        env.reset(seed=0)
        try:
            env.parse(command)
        except ParseError as exc:
            assert exc.message
        text, *_rest, info = env.step(command)
        assert env.observation_space.contains(text)
        assert info["invalid_action"] == text.startswith("Invalid command: ")


def test_action_schema_round_trip(env_name: str) -> None:
    env = textenvs.make(env_name)
    env.reset(seed=0)
    schema = env.action_schema.model_json_schema()
    assert schema["type"] == "object" and schema.get("additionalProperties") is False
    with pytest.raises(ValueError):
        env.command_for({"no_such_field": 1})


def test_rules_text_exists(env_name: str) -> None:
    env = textenvs.make(env_name)
    assert len(env.rules) > 200
    from textenvs.prompts import system_prompt

    assert env.rules.strip() in system_prompt(env_name)


def test_each_step_records_the_command_it_executed(env_name: str) -> None:
    env = textenvs.make(env_name)
    _obs, info = env.reset(seed=5)
    assert info["read_as"] is None
    command = env.random_command(info, np.random.default_rng(5))
    reply = f"I looked at the map.\nAction: {command}"
    _text, _reward, _terminated, _truncated, info = env.step(reply)
    assert not info["invalid_action"] and info["read_as"]
    assert env.parse(info["read_as"]) == env.parse(reply)


def test_world_for_is_the_world_reset_draws_and_touches_no_episode(env_name: str) -> None:
    env = textenvs.make(env_name)
    options = {"level": env.levels[0]} if env.levels else {}
    env.reset(seed=4)
    playing = env._state
    for seed in (0, 4, 9):
        fresh = textenvs.make(env_name)
        fresh.reset(seed=seed, options=options)
        assert env.world_for(seed, options) == fresh._state
    assert env._state is playing and env.steps_used == 0


def test_stepping_a_read_reply_is_stepping_its_text(env_name: str) -> None:
    """`step_read` with what `parse` gave (an action, or the `ParseError` it raised) does
    what `step` does with the text."""
    by_text, by_read = textenvs.make(env_name), textenvs.make(env_name)
    _obs, info = by_text.reset(seed=2)
    by_read.reset(seed=2)
    rng = np.random.default_rng(2)
    replies = [
        "Action: north. Actually no.",
        *(by_text.random_command(info, rng) for _ in range(3)),
    ]
    for reply in replies:
        try:
            read: object = by_read.parse(reply)
        except ParseError as exc:
            read = exc
        assert by_read.step_read(read) == by_text.step(reply)
        if by_text.done:
            break
