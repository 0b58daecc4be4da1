"""`observations = "changes"`: after an episode's first observation the `llm` agent sends
what changed, and any prompt still opens with a whole observation.

Every test talks to the real loopback OpenAI-protocol server.
"""

from __future__ import annotations

from typing import Any

import textenvs
from benchmarks.support.openai_server import OpenAIServer, text
from tests.agents.llm_support import agent_for, play
from tests.agents.view_reader import rebuild
from textenvs.agents.llm import LLMConfig
from textenvs.agents.llm.observation_view import VIEW_NOTE


def magnetic_field(steps: int) -> Any:
    env = textenvs.make("magnetic-field")
    env.max_steps = steps
    return env


def user_contents(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


def test_each_observation_after_the_first_is_sent_as_its_changes(server: OpenAIServer) -> None:
    server.default = text("Action: right")
    result = play(agent_for(server, observations="changes"), env=magnetic_field(8))
    shown = user_contents(server.requests[-1].messages)
    observations = [turn.observation for turn in result.turns]
    assert shown[0] == observations[0]
    assert all(view.startswith(VIEW_NOTE) for view in shown[1:])
    for previous, current, view in zip(observations, observations[1:], shown[1:], strict=False):
        assert rebuild(previous, view) == current
    # the grid, its legend and the hints are sent once
    assert sum(map(len, shown)) < 0.4 * sum(map(len, observations))


def test_full_observations_by_default(server: OpenAIServer) -> None:
    server.default = text("Action: right")
    result = play(agent_for(server), env=magnetic_field(4))
    assert user_contents(server.requests[-1].messages) == [t.observation for t in result.turns]


def test_a_prompt_opens_with_a_whole_observation_after_every_cut(server: OpenAIServer) -> None:
    """With a two-turn window every request drops a turn: its new first observation is
    sent whole, the ones after it as changes against the one before."""
    server.default = text("Action: right")
    agent = agent_for(server, observations="changes", history_policy="window", history=2)
    result = play(agent, env=magnetic_field(8))
    observations = [turn.observation for turn in result.turns]
    for number, request in enumerate(server.requests):
        shown = user_contents(request.messages)
        first = max(0, number - 2)
        assert shown[0] == observations[first]
        assert all(view.startswith(VIEW_NOTE) for view in shown[1:])


def test_the_setting_is_recorded_and_local_defaults_to_changes() -> None:
    remote = LLMConfig(model="m", base_url="http://127.0.0.1:9/v1")
    assert remote.public()["observations"] == "full"
    assert LLMConfig(model="local").public()["observations"] == "changes"
    assert LLMConfig(model="local", observations="full").observation_view == "full"
