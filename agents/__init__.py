"""Agents that play textenvs scenarios: random, scripted, reactive, learner, human (and llm)."""

from __future__ import annotations

from typing import Any

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


__all__ = ["AGENTS", "Agent", "Decision", "EpisodeContext", "make_agent"]
