"""Agents that play textenvs scenarios: random, scripted, reactive, learner, human (and llm)."""

from __future__ import annotations

from typing import Any

from textenvs.agents.plays import not_played
from textenvs.core.declaration import load_entry_point
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext

#: each agent's class ("module:Class"), imported only when one is made (the llm agent's
#: module pulls in its client)
AGENT_CLASSES = {
    "random": "textenvs.agents.random_agent:RandomAgent",
    "scripted": "textenvs.agents.scripted:ScriptedAgent",
    "reactive": "textenvs.agents.scripted.reactive:ReactiveAgent",
    "learner": "textenvs.agents.scripted.learners:LearnerAgent",
    "human": "textenvs.agents.human:HumanAgent",
    "llm": "textenvs.agents.llm:LLMAgent",
}
AGENTS = tuple(AGENT_CLASSES)


def make_agent(name: str, **options: Any) -> Agent:
    """Build an agent by name; `options` are that agent's settings."""
    if name not in AGENT_CLASSES:
        raise ValueError(f"unknown agent '{name}'. Known: {', '.join(AGENTS)}")
    return load_entry_point(AGENT_CLASSES[name])(**options)


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
