"""The `changes` view loses nothing: the previous observation and the view give back the
current observation, on whole episodes of every scenario."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests.agents.view_reader import rebuild
from textenvs.agents import make_agent
from textenvs.agents.llm.observation_view import (
    GONE,
    NEW_SECTION,
    UNCHANGED,
    changes_view,
)
from textenvs.core.registry import SCENARIOS, make
from textenvs.episodes.loop import context_for


def played_observations(env_id: str, seed: int, agent_name: str) -> list[str]:
    env = make(env_id)
    agent = make_agent(agent_name)
    observation, info = env.reset(seed=seed)
    texts = [observation]
    agent.reset(context_for(env, seed))
    for _ in range(60):
        decision = asyncio.run(agent.act(observation, info))
        observation, _, terminated, truncated, info = env.step(decision.command)
        texts.append(observation)
        if terminated or truncated:
            break
    return texts


@pytest.mark.parametrize("scenario", [s.env_id for s in SCENARIOS])
@pytest.mark.parametrize("agent_name", ["scripted", "random"])
def test_the_view_rebuilds_every_observation(scenario: str, agent_name: str) -> None:
    for seed in range(3):
        texts = played_observations(scenario, seed, agent_name)
        for previous, current in itertools.pairwise(texts):
            assert rebuild(previous, changes_view(previous, current)) == current


#: most characters the views of a scripted episode may have, as a share of the whole
#: observations (Treasure Hunt's agent-centred view changes nearly whole every step)
SHARE_SENT = {"MagneticField": 0.4, "EMAnomaly": 0.8, "SquadRecon": 0.8, "Megacity": 0.5}


@pytest.mark.parametrize("name", SHARE_SENT)
def test_the_view_sends_a_fraction_of_repetitive_observations(name: str) -> None:
    texts = played_observations(name, 0, "scripted")  # any version
    views = [changes_view(a, b) for a, b in itertools.pairwise(texts)]
    assert sum(map(len, views)) <= SHARE_SENT[name] * sum(map(len, texts[1:]))


def test_a_section_put_in_front_leaves_the_next_one_paired_by_name() -> None:
    map_section = "Map:\n" + "\n".join([". . . . . . . ."] * 8)
    previous = f"Camps: 0/2\nSteps left: 39\nStrength: 9\n\n{map_section}"
    current = f"Last step:\n  A held.\n\nCamps: 0/2\nSteps left: 38\nStrength: 9\n\n{map_section}"
    view = changes_view(previous, current)
    assert GONE.split("{")[0] not in view
    assert f"{NEW_SECTION}\nLast step:\n  A held." in view
    assert "Camps ...\nSteps left: 38\n... 1 line as before" in view
    assert view.endswith(UNCHANGED.format("Map"))
    assert rebuild(previous, view) == current
