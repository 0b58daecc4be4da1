"""Play one episode: an env, an agent, a seed -> an `EpisodeResult` with every turn.

The env's `reset` and `step` may also be coroutines (see `evals.players.ThreadedEnv`).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

from textenvs.core.env import TextEnv
from textenvs.core.registry import episode_level
from textenvs.episodes.envs import EpisodeEnv
from textenvs.episodes.protocol import (
    AGENT_ERROR,
    CONTEXT_OVERFLOW,
    Agent,
    Decision,
    EpisodeContext,
    EpisodeEnd,
)
from textenvs.episodes.record import INVALID_LIMIT, EpisodeResult, Turn


def context_for(
    env: EpisodeEnv,
    seed: int | None,
    options: dict[str, Any] | None = None,
    *,
    trial: int = 1,
    trials: int = 1,
    repeat: int = 0,
) -> EpisodeContext:
    from textenvs.prompts import Mode, prompt_name, rules_text

    prompt = prompt_name(env.name, options)
    try:  # in trial mode, the rules of episodes that follow one another
        rules = rules_text(prompt, Mode(continued=trials > 1))
    except FileNotFoundError:  # a scenario this install has no text for (a service's)
        rules = env.rules
    return EpisodeContext(
        env_name=env.name,
        seed=seed,
        rules=rules,
        max_steps=env.max_steps,
        parse=env.parse,
        action_schema=env.action_schema,
        command_for=env.command_for,
        random_command=env.random_command,
        prompt=prompt,
        trial=trial,
        trials=trials,
        repeat=repeat,
    )


async def run_episode(
    env: TextEnv[Any, Any],
    agent: Agent,
    seed: int | None,
    *,
    options: dict[str, Any] | None = None,
    on_turn: Callable[[Turn], None] | None = None,
    max_invalid: int | None = None,
    trial: int = 1,
    trials: int = 1,
    repeat: int = 0,
) -> EpisodeResult:
    """Play until the episode ends or the agent cannot go on. Agent faults are recorded
    as outcome `agent_error` and never raised. `max_invalid` stops the episode (outcome
    `invalid_limit`) after that many invalid commands in a row. `trial` of `trials`: the
    episode's place in a trial group (`evals.trials`), and `repeat` which of a seed's
    episodes it is, told to the agent. An episode the agent did not break off ends with
    `agent.end_episode` and the final observation."""
    started = time.perf_counter()
    level = episode_level(env.name, options, getattr(env, "level", None))
    result = EpisodeResult(env=env.name, seed=seed, agent=agent.name, level=level)
    observation, info = await _maybe_await(env.reset(seed=seed, options=options))
    agent.reset(context_for(env, seed, options, trial=trial, trials=trials, repeat=repeat))
    invalid_run = 0
    while True:
        try:
            decision = await agent.act(observation, info)
        except Exception as exc:  # an agent fault ends this episode, never the batch
            decision = Decision("", outcome=AGENT_ERROR, error=f"{type(exc).__name__}: {exc}")
        if result.decided(decision):
            break
        shown = observation
        stepped = await _maybe_await(env.step(decision.command))
        observation, info = stepped[0], stepped[4]
        over = result.stepped(shown, decision, stepped)
        if on_turn is not None:
            on_turn(result.turns[-1])
        if over:
            break
        invalid_run = invalid_run + 1 if info["invalid_action"] else 0
        if max_invalid is not None and invalid_run >= max_invalid:
            result.outcome, result.error = INVALID_LIMIT, f"{invalid_run} invalid commands in a row"
            break
    result.ended(observation, info)
    end_episode = getattr(agent, "end_episode", None)  # duck-typed agents may lack it
    if end_episode is not None and result.outcome not in (AGENT_ERROR, CONTEXT_OVERFLOW):
        end = EpisodeEnd(result.outcome, result.success, result.total_reward, result.steps)
        try:
            end_episode(observation, info, end)
        except Exception as exc:  # like a fault in `act`: recorded, never raised
            result.outcome, result.error = AGENT_ERROR, f"{type(exc).__name__}: {exc}"
    result.wall_s = time.perf_counter() - started
    return result


async def _maybe_await(value: Any) -> Any:
    """An env's reset/step result; an async env (e.g. a remote one) returns a coroutine."""
    return await value if inspect.isawaitable(value) else value
