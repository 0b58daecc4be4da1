"""Shared test helpers."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest

import textenvs
from textenvs.agents import make_agent
from textenvs.evals.episode import EpisodeResult, run_episode

ENV_NAMES = textenvs.names()


def play(env_name: str, agent_name: str, seed: int, **options: Any) -> EpisodeResult:
    env = textenvs.make(env_name)
    return asyncio.run(run_episode(env, make_agent(agent_name), seed, options=options or None))


def transcript_digest(result: EpisodeResult) -> str:
    """A hash of everything an episode showed and did (wall-clock fields excluded)."""
    turns = [(t.observation, t.command, t.reward, t.invalid_action, t.events) for t in result.turns]
    blob = json.dumps([turns, result.final_observation, result.outcome], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


@pytest.fixture(params=ENV_NAMES)
def env_name(request: pytest.FixtureRequest) -> str:
    return request.param
