"""Agents that play textenvs scenarios: random, scripted, reactive, learner, human (and llm)."""

from __future__ import annotations

from typing import Any

from textenvs.agents.plays import not_played
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext

AGENTS = ("random", "scripted", "reactive", "learner", "human", "llm")


def make_agent(name: str, **options: Any) -> Agent:
    """Build an agent by name; `options` are that agent's settings."""
    if name == "random":
        from textenvs.agents.random_agent import RandomAgent

        return RandomAgent(**options)
    if name == "scripted":
        from textenvs.agents.scripted import ScriptedAgent

        return ScriptedAgent(**options)
    if name == "reactive":
        from textenvs.agents.scripted.reactive import ReactiveAgent

        return ReactiveAgent(**options)
    if name == "learner":
        from textenvs.agents.scripted.learners import LearnerAgent

        return LearnerAgent(**options)
    if name == "human":
        from textenvs.agents.human import HumanAgent

        return HumanAgent(**options)
    if name == "llm":
        from textenvs.agents.llm import LLMAgent

        return LLMAgent(**options)
    raise ValueError(f"unknown agent '{name}'. Known: {', '.join(AGENTS)}")


def agent_problem(name: str, env_name: str) -> str | None:
    """Why the agent `name` cannot play `env_name`, in one line (None: it can)."""
    if name == "reactive":
        from textenvs.agents.scripted.reactive import POLICIES as plays
    elif name == "learner":
        from textenvs.agents.scripted.learners import LEARNERS as plays
    else:
        return None
    problem = not_played(name, plays, env_name)
    return problem and f"{problem}; give --env one of them"


__all__ = [
    "AGENTS",
    "Agent",
    "Decision",
    "EpisodeContext",
    "agent_problem",
    "make_agent",
    "not_played",
]
