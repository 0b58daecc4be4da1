"""Play one episode: an env, an agent, a seed -> an `EpisodeResult` with every turn.

The env's `reset` and `step` may also be coroutines (see `evals.runner.ThreadedEnv`).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from textenvs.agents.base import AGENT_ERROR, Agent, Decision, EpisodeContext, EpisodeEnd
from textenvs.agents.base import CONTEXT_OVERFLOW as CONTEXT_OVERFLOW  # an outcome, re-exported
from textenvs.core.env import TextEnv
from textenvs.core.registry import episode_level

# How an episode ended.
SUCCESS = "success"
FAILURE = "failure"  # terminated without success
TIMEOUT = "timeout"  # the step budget ran out
INVALID_LIMIT = "invalid_limit"  # `max_invalid` invalid commands in a row
# AGENT_ERROR and CONTEXT_OVERFLOW are the agent's (agents/base.py), imported above.


@dataclass
class Turn:
    step: int
    observation: str  # what the agent was shown before it acted
    command: str
    reward: float
    invalid_action: bool
    error: str | None
    events: list[dict[str, Any]]
    raw: str | None = None
    #: the canonical command the env executed (None when the reply was rejected: `error`)
    read_as: str | None = None
    reasks: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    record: dict[str, Any] = field(default_factory=dict)


@dataclass
class EpisodeResult:
    env: str
    seed: int | None
    agent: str
    success: bool = False
    total_reward: float = 0.0
    steps: int = 0
    invalid_actions: int = 0
    reasks: int = 0
    outcome: str = TIMEOUT
    error: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    wall_s: float = 0.0
    final_observation: str = ""
    #: the scenario's difficulty level (None for a scenario without levels)
    level: int | None = None
    #: `info["observation"]` of the last observation (the data form of the text above)
    final_info_observation: dict[str, Any] = field(default_factory=dict)
    turns: list[Turn] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Everything but the turns: one line of a results file."""
        data = asdict(self)
        del data["turns"], data["final_observation"], data["final_info_observation"]
        return data

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def context_for(
    env: TextEnv[Any, Any],
    seed: int | None,
    options: dict[str, Any] | None = None,
    *,
    trial: int = 1,
    trials: int = 1,
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
) -> EpisodeResult:
    """Play until the episode ends or the agent cannot go on. Agent faults are recorded
    as outcome `agent_error` and never raised. `max_invalid` stops the episode (outcome
    `invalid_limit`) after that many invalid commands in a row. `trial` of `trials`: the
    episode's place in a trial group (`evals.trials`), told to the agent. An episode the
    agent did not break off ends with `agent.end_episode` and the final observation."""
    started = time.perf_counter()
    level = episode_level(env.name, options, getattr(env, "level", None))
    result = EpisodeResult(env=env.name, seed=seed, agent=agent.name, level=level)
    observation, info = await _maybe_await(env.reset(seed=seed, options=options))
    agent.reset(context_for(env, seed, options, trial=trial, trials=trials))
    invalid_run = 0
    while True:
        try:
            decision = await agent.act(observation, info)
        except Exception as exc:  # an agent fault ends this episode, never the batch
            decision = Decision("", outcome=AGENT_ERROR, error=f"{type(exc).__name__}: {exc}")
        _add_usage(result, decision)
        if decision.outcome is not None:
            result.outcome, result.error = decision.outcome, decision.error
            break
        shown = observation
        stepped = await _maybe_await(env.step(decision.command))
        observation, reward, terminated, truncated, info = stepped
        turn = Turn(
            step=info["steps_used"],
            observation=shown,
            command=decision.command,
            reward=reward,
            invalid_action=info["invalid_action"],
            error=info["error"],
            events=info["events"],
            raw=decision.raw if decision.raw is not None else decision.command,
            read_as=info.get("read_as"),
            reasks=decision.reasks,
            usage=dict(decision.usage),
            latency_s=decision.latency_s,
            record=decision.record,
        )
        result.turns.append(turn)
        result.total_reward += reward
        result.steps = info["steps_used"]
        result.invalid_actions += int(info["invalid_action"])
        if on_turn is not None:
            on_turn(turn)
        if terminated or truncated:
            result.success = bool(info["success"])
            result.outcome = SUCCESS if result.success else (FAILURE if terminated else TIMEOUT)
            break
        invalid_run = invalid_run + 1 if info["invalid_action"] else 0
        if max_invalid is not None and invalid_run >= max_invalid:
            result.outcome, result.error = INVALID_LIMIT, f"{invalid_run} invalid commands in a row"
            break
    result.final_observation = observation
    result.final_info_observation = info.get("observation") or {}
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


def _add_usage(result: EpisodeResult, decision: Decision) -> None:
    result.reasks += decision.reasks
    result.latency_s += decision.latency_s
    for key, value in decision.usage.items():
        result.usage[key] = result.usage.get(key, 0) + int(value)
