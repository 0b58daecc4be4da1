"""What the `llm` agent's tests share: an agent on the loopback server, one episode
played, a longer Treasure Hunt."""

from __future__ import annotations

import asyncio
from typing import Any

import textenvs
from benchmarks.support.openai_server import OpenAIServer
from textenvs.agents import make_agent
from textenvs.agents.llm import LLMAgent
from textenvs.episodes.loop import run_episode
from textenvs.episodes.record import EpisodeResult
from textenvs.scenarios.treasure_hunt.env import TreasureHuntEnv

FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.02, "read_timeout_s": 5.0}


def agent_for(server: OpenAIServer, **options: Any) -> LLMAgent:
    agent = make_agent("llm", model="test-model", base_url=server.base_url, **{**FAST, **options})
    assert isinstance(agent, LLMAgent)
    return agent


def play(agent: LLMAgent, seed: int = 0, env: Any = None) -> EpisodeResult:
    async def go() -> EpisodeResult:
        try:
            return await run_episode(env or textenvs.make("treasure-hunt"), agent, seed)
        finally:
            await agent.aclose()

    return asyncio.run(go())


class LongHunt(TreasureHuntEnv):
    """Treasure Hunt with a 40-step budget, for the bounded-history test."""

    max_steps = 40
