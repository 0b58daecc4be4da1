"""A scenario as a tool-using environment, for any Inspect agent.

    from inspect_ai.agent import react
    from textenvs.adapters.inspect import scenario_task, env_command

    task = scenario_task("treasure-hunt", seeds="0-9", mode="tools",
                         solver=react(tools=[env_command()]))

In `mode="tools"` the sample's input is the rules and the first observation; the agent
acts by calling the `env_command` tool (one command per call), which steps the episode
and returns the next observation. The episode's state is the list of commands sent so
far, kept in the sample's store (so it is logged, and serialisable): each call replays
them on a fresh env from the sample's seed (same seed, same episode) and steps the new
one. The scorer scores the episode as played; an agent that stops before the end gets
the outcome `unfinished` (not a success), with the return so far.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, tool
from inspect_ai.util import store

import textenvs
from textenvs.adapters.inspect.solver import RESULT_KEY
from textenvs.episodes.loop import run_episode
from textenvs.episodes.protocol import UNFINISHED, Agent, Decision
from textenvs.episodes.record import EpisodeResult
from textenvs.evals.records import episode_record

EPISODE_KEY = "textenvs_episode"  # {env, seed, options}: which episode the tool plays
COMMANDS_KEY = "textenvs_commands"  # the commands sent so far


class ReplayAgent(Agent):
    """Sends `commands` in order, then stops the episode as `unfinished`."""

    name = "inspect-agent"

    def __init__(self, commands: list[str]) -> None:
        self.commands = commands
        self.sent = 0

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        if self.sent == len(self.commands):
            return Decision("", outcome=UNFINISHED, error="the agent stopped before the end")
        self.sent += 1
        return Decision(self.commands[self.sent - 1], raw=self.commands[self.sent - 1])


async def replay(episode: dict[str, Any], commands: list[str]) -> tuple[EpisodeResult, int]:
    """The episode after `commands`, and how many of them it took before it ended."""
    env = textenvs.make(episode["env"])
    agent = ReplayAgent(commands)
    try:
        result = await run_episode(env, agent, episode["seed"], options=episode["options"])
    finally:
        env.close()
    return result, agent.sent


def keep_record(episode: dict[str, Any], result: EpisodeResult) -> None:
    """Leave the episode record where the scorer reads it."""
    record = episode_record(result, (episode["env"], episode["seed"], 0), None, "")
    store().set(RESULT_KEY, record | {"final_observation": result.final_observation})


@tool
def env_command() -> Tool:
    async def execute(command: str) -> str:
        """Send one command to the environment and get back what you now observe.

        Args:
          command: One command, written as the rules say (e.g. "north").

        Returns:
          The next observation, and the episode's end when it has ended.
        """
        episode = store().get(EPISODE_KEY)
        if episode is None:
            raise RuntimeError("no textenvs episode in this sample: use mode='tools'")
        commands = [*store().get(COMMANDS_KEY, []), command]
        result, used = await replay(episode, commands)
        if used < len(commands):
            return f"The episode is over ({result.outcome}); no more commands are read."
        store().set(COMMANDS_KEY, commands)
        keep_record(episode, result)
        if result.outcome == UNFINISHED:
            return result.final_observation
        return (
            f"{result.final_observation}\n\nThe episode is over: {result.outcome}, "
            f"return {result.total_reward:g} in {result.steps} steps."
        )

    return execute


@solver
def start_episode() -> Solver:
    """Set up the sample's episode for the `env_command` tool (the task's setup)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        episode = {
            "env": state.metadata["env"],
            "seed": int(state.metadata["seed"]),
            "options": state.metadata.get("options"),
        }
        store().set(EPISODE_KEY, episode)
        store().set(COMMANDS_KEY, [])
        result, _ = await replay(episode, [])
        keep_record(episode, result)  # an agent that never acts is scored too
        return state

    return solve
