"""Where episodes are played: an `EpisodePlayer` plays keys with a fresh agent each on
envs it owns; a `Backend` hands out players (`LocalBackend`: on this event loop;
`ray_backend.RayBackend`: on Ray actors). A crash outside the agent's `act` becomes the
episode's `agent_error` record, so one bad episode never ends a long batch. Agents that
only compute never await; `YieldingAgent` hands the loop back every few milliseconds so
the progress display and the other episodes keep moving."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import textenvs
from textenvs.core.env import TextEnv
from textenvs.episodes.envs import EnvFactory
from textenvs.episodes.loop import run_episode
from textenvs.episodes.protocol import AGENT_ERROR, Agent, Decision, EpisodeContext, EpisodeEnd
from textenvs.episodes.record import EpisodeResult
from textenvs.evals import trials
from textenvs.evals.failures import CRASHED
from textenvs.evals.metrics import Key
from textenvs.evals.plan import EvalPlan

AgentFactory = Callable[[], Agent]
YIELD_EVERY_S = 0.005  # a CPU-bound agent gives the loop back at least this often


class YieldingAgent(Agent):
    """Delegates to `inner`, yielding to the event loop when it has held it too long."""

    def __init__(self, inner: Agent) -> None:
        self.inner = inner
        self.name = inner.name
        self._since = time.perf_counter()

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        self.inner.reset(context)

    def end_episode(self, observation: str, info: dict[str, Any], end: EpisodeEnd) -> None:
        self.inner.end_episode(observation, info, end)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        now = time.perf_counter()
        if now - self._since > YIELD_EVERY_S:
            await asyncio.sleep(0)
            self._since = time.perf_counter()
        return await self.inner.act(observation, info)


class ThreadedEnv:
    """A blocking env (e.g. `RemoteEnv`, whose steps are HTTP calls) whose `reset` and
    `step` run in `executor`, so C episodes still step at once and the loop never waits
    on the network. Everything else is the wrapped env's."""

    def __init__(self, env: Any, executor: ThreadPoolExecutor) -> None:
        self.env = env
        self._executor = executor

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    async def reset(self, **kwargs: Any) -> Any:
        return await self._call(functools.partial(self.env.reset, **kwargs))

    async def step(self, command: str) -> Any:
        return await self._call(functools.partial(self.env.step, command))

    async def _call(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)


async def play_with_fresh_agent(
    env: TextEnv[Any, Any], factory: AgentFactory, key: Key, plan: EvalPlan
) -> EpisodeResult:
    """One episode with a fresh agent. A crash outside `act` (agent set-up or reset, or
    the env itself) is recorded as `agent_error` with its message, so one bad episode
    is reported instead of ending a long batch."""
    agent: Agent | None = None
    try:
        agent = factory()
        return await run_episode(
            env,
            YieldingAgent(agent),
            key[1],
            options=plan.env_options or None,
            max_invalid=plan.max_invalid,
            repeat=key[2],
        )
    except Exception as exc:
        return crashed_result(key, agent.name if agent is not None else "?", exc)
    finally:
        if agent is not None:
            await agent.aclose()


def crashed_result(key: Key, agent: str, exc: Exception, doing: str = "") -> EpisodeResult:
    """The `agent_error` record of an episode that crashed outside `act`."""
    error = f"{CRASHED}{doing}{type(exc).__name__}: {exc}"
    return EpisodeResult(env=key[0], seed=key[1], agent=agent, outcome=AGENT_ERROR, error=error)


class EpisodePlayer:
    """Plays episodes one after another on envs it owns (one per scenario), with a fresh
    agent each. The local backend runs C players on one event loop; a Ray actor holds a
    few of them (`evals/ray_backend.py`)."""

    def __init__(
        self,
        plan: EvalPlan,
        factory: AgentFactory,
        make_env: EnvFactory | None = None,
        executor: ThreadPoolExecutor | None = None,
    ) -> None:
        self.plan = plan
        self.factory = factory
        self.make_env = make_env
        self.executor = executor
        self.envs: dict[str, Any] = {}

    async def play(self, keys: list[Key]) -> list[EpisodeResult]:
        """A group of episodes, in order: independent episodes, or (in trial mode) one
        trial group played by one agent in one conversation."""
        if self.plan.trials > 1:
            return await self.play_trials(keys)
        return [await self.play_one(key) for key in keys]

    async def play_one(self, key: Key) -> EpisodeResult:
        env = await self._env(key)
        if isinstance(env, EpisodeResult):
            return env
        return await play_with_fresh_agent(env, self.factory, key, self.plan)

    async def play_trials(self, keys: list[Key]) -> list[EpisodeResult]:
        """A trial group with one agent; a crash stops the group there, recorded on the
        trial it hit."""
        env = await self._env(keys[0])
        if isinstance(env, EpisodeResult):
            return [env]
        results: list[EpisodeResult] = []
        agent: Agent | None = None
        try:
            agent = self.factory()
            group = trials.play_group(
                env,
                YieldingAgent(agent),
                [key[1] for key in keys],
                options=self.plan.env_options or None,
                max_invalid=self.plan.max_invalid,
                repeat=keys[0][2],
            )
            async for result in group:
                results.append(result)
        except Exception as exc:
            key = keys[len(results)]
            results.append(crashed_result(key, agent.name if agent is not None else "?", exc))
        finally:
            if agent is not None:
                await agent.aclose()
        return results

    async def _env(self, key: Key) -> Any:
        """The player's env for the key's scenario, or the episode's crash record when it
        cannot be opened (e.g. a lost service: this episode fails, not the run)."""
        if key[0] not in self.envs:
            try:
                self.envs[key[0]] = await self._open(key[0])
            except Exception as exc:
                return crashed_result(key, "?", exc, "cannot open the env: ")
        return self.envs[key[0]]

    async def _open(self, name: str) -> Any:
        if self.make_env is None or self.executor is None:
            return textenvs.make(name)
        loop = asyncio.get_running_loop()
        env = await loop.run_in_executor(self.executor, self.make_env, name)
        return ThreadedEnv(env, self.executor)

    async def close(self) -> None:
        for env in self.envs.values():  # a remote env deletes its session (an HTTP call)
            with contextlib.suppress(Exception):
                if isinstance(env, ThreadedEnv):
                    await env._call(env.env.close)
                else:
                    env.close()
        self.envs.clear()


class Player(Protocol):
    async def play(self, keys: list[Key]) -> list[EpisodeResult]: ...

    async def close(self) -> None: ...


class Backend(Protocol):
    """Where episodes are played. The driver (`run_eval`) stays the only writer of the run
    folder: a backend only turns groups of keys into `EpisodeResult`s. `start` and `stop`
    are idempotent; `player(i)` is one of the C episode slots; `max_group` caps the keys
    sent to a player at once (more amortises a per-call cost, e.g. a remote call)."""

    max_group: int

    def start(self) -> None: ...

    def player(self, index: int) -> Player: ...

    def stop(self) -> None: ...


class LocalBackend:
    """Every episode on this process's event loop (the default backend)."""

    max_group = 1

    def __init__(
        self, plan: EvalPlan, factory: AgentFactory, make_env: EnvFactory | None = None
    ) -> None:
        self.plan = plan
        self.factory = factory
        self.make_env = make_env
        self._executor: ThreadPoolExecutor | None = None

    def start(self) -> None:
        if self.make_env is not None and self._executor is None:
            self._executor = ThreadPoolExecutor(self.plan.concurrency, "textenvs-env")

    def player(self, index: int) -> Player:
        return EpisodePlayer(self.plan, self.factory, self.make_env, self._executor)

    def stop(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None
