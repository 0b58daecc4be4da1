"""Every scenario through TextArena's own registry, agent-function loop and state API."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import numpy as np
import pytest
import textarena as ta

import textenvs
from textenvs.adapters.textarena import ARENA_IDS, arena_id, register_all
from textenvs.agents import make_agent
from textenvs.episodes.loop import run_episode

ENV_NAMES = textenvs.names()


def test_every_scenario_is_registered_with_textarena() -> None:
    expected = [arena_id(textenvs.get(name)) for name in ENV_NAMES]
    assert ARENA_IDS == expected == register_all()  # registering again is a no-op
    assert "textenvs-treasure-hunt-v6" in ARENA_IDS
    for env_id in ARENA_IDS:
        assert env_id in ta.envs.registration.ENV_REGISTRY
        assert f"{env_id}-raw" in ta.envs.registration.ENV_REGISTRY


class RandomCommandAgent(ta.Agent):
    """A TextArena agent (observation string in, action string out) that replays the
    textenvs random baseline's commands, so the episode can be checked against it."""

    def __init__(self, env_name: str, seed: int) -> None:
        self.local = textenvs.make(env_name)
        self.info: dict[str, Any] = self.local.reset(seed=seed)[1]
        self.rng = np.random.default_rng([seed, 0])  # as the random agent seeds itself
        self.seen: list[str] = []

    def __call__(self, observation: str) -> str:
        self.seen.append(observation)
        command = self.local.random_command(self.info, self.rng)
        self.info = self.local.step(command)[4]
        return command


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_full_episode_through_textarena(env_name: str) -> None:
    seed = 5
    env = ta.make(arena_id(textenvs.get(env_name)))
    agent = RandomCommandAgent(env_name, seed)
    before = random.getstate()
    env.reset(num_players=1, seed=seed)
    assert random.getstate() == before  # TextArena's state must not reseed global random
    done, turns = False, 0
    while not done:
        player_id, observation = env.get_observation()
        assert player_id == 0 and isinstance(observation, str)
        done, step_info = env.step(action=agent(observation))
        assert {"reward", "invalid_action", "events"} <= set(step_info)
        turns += 1
    rewards, game_info = env.close()

    # The same episode played by the textenvs runner with the random agent.
    local = asyncio.run(run_episode(textenvs.make(env_name), make_agent("random"), seed))
    assert turns == local.steps
    assert rewards == {0: pytest.approx(local.total_reward)}
    assert game_info[0]["success"] == local.success
    assert game_info[0]["turn_count"] == local.steps
    # Each observation is the rules prompt plus the board the local runner showed.
    for shown, turn in zip(agent.seen, local.turns, strict=True):
        assert shown.startswith("You are playing") and shown.endswith(turn.observation)


def test_no_history_growth_across_resets() -> None:
    env = ta.make(ARENA_IDS[0])
    sizes = []
    for seed in range(60):
        env.reset(num_players=1, seed=seed)
        first = env.get_observation()[1]
        for _ in range(3):
            done, _ = env.step(action="xyzzy")  # wasted turns, same size every time
            if done:
                break
        last = env.get_observation()[1]
        env.close()
        sizes.append((len(first), len(last), len(env.state.logs)))
    # Bounded by one episode's content: the 60th episode carries nothing from the first 59.
    assert max(s[0] for s in sizes) < 3 * min(s[0] for s in sizes)
    assert max(s[2] for s in sizes) <= 1 + 2 + 2 * 3
    assert max(s[1] for s in sizes[-10:]) <= max(s[1] for s in sizes[:10]) * 2


def test_raw_variant_speaks_textarena_messages() -> None:
    env = ta.make(f"{ARENA_IDS[0]}-raw")
    env.reset(num_players=1, seed=0)
    _, messages = env.get_observation()
    kinds = [kind for _, _, kind in messages]
    assert kinds == [ta.ObservationType.PROMPT, ta.ObservationType.GAME_BOARD]
    assert env.get_observation()[1] == []  # TextArena hands each message out once


def test_single_player_only() -> None:
    env = ta.make(ARENA_IDS[0])
    with pytest.raises(ValueError, match="single-player"):
        env.reset(num_players=2, seed=0)
