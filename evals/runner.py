"""Batch evaluation: envs x seeds x episodes-per-seed with bounded asyncio concurrency.

C workers pull (env, seed, episode) keys from one queue, so at most C episodes (and so
at most C LLM calls) are in flight. Each worker owns its env instances and builds a
fresh agent per episode from the factory. Agents that only compute never await; a thin
wrapper hands the loop back every few milliseconds so the progress display and the
other episodes keep moving.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import platform
import re
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import textenvs
from textenvs.agents.base import Agent, Decision, EpisodeContext, EpisodeEnd
from textenvs.core.env import TextEnv
from textenvs.core.redact import redact_data
from textenvs.evals import store, trials
from textenvs.evals.episode import AGENT_ERROR, EpisodeResult, run_episode
from textenvs.evals.failures import CRASHED, FailFast
from textenvs.evals.learning import learning_curves
from textenvs.evals.metrics import Key, Record, key_of, summarize_by_env
from textenvs.evals.skills import measure

AgentFactory = Callable[[], Agent]
YIELD_EVERY_S = 0.005  # a CPU-bound agent gives the loop back at least this often


def parse_seeds(spec: str) -> list[int]:
    """`"0-99"`, `"3"`, `"0-4,10,20-22"` -> sorted unique seeds."""
    seeds: set[int] = set()
    for part in spec.replace(" ", "").split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            raise ValueError(f"bad seed range '{part}': use N, N-M or a comma list of those")
        lo, hi = int(match[1]), int(match[2] or match[1])
        if hi < lo:
            raise ValueError(f"bad seed range '{part}': {hi} < {lo}")
        seeds.update(range(lo, hi + 1))
    return sorted(seeds)


def resolve_envs(spec: str) -> list[str]:
    """`"all"` (every registered scenario, at run time) or a comma list of names."""
    if spec.strip().lower() == "all":
        return textenvs.names()
    names = [textenvs.get(name.strip()).name for name in spec.split(",") if name.strip()]
    if not names:
        raise ValueError("--env needs a scenario name, a comma list, or 'all'")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"--env names {', '.join(twice)} more than once")
    return names


@dataclass
class EvalPlan:
    envs: list[str]
    seeds: list[int]
    episodes_per_seed: int = 1
    max_invalid: int | None = None
    #: options for every episode's reset (e.g. {"level": 2})
    env_options: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 8
    #: trial mode: groups of this many consecutive seeds, each played by one agent in
    #: order (`evals.trials`)
    trials: int = 1

    def planned(self) -> list[Key]:
        return [
            (env, seed, k)
            for env in self.envs
            for seed in self.seeds
            for k in range(self.episodes_per_seed)
        ]

    def units(self) -> list[list[Key]]:
        """What one worker plays with one agent: an episode, or a trial group in order."""
        if self.trials == 1:
            return [[key] for key in self.planned()]
        return trials.group_keys(self.envs, self.seeds, self.episodes_per_seed, self.trials)


def build_config(
    plan: EvalPlan,
    agent: Agent,
    *,
    agent_options: dict[str, Any],
    prices: dict[str, float] | None,
    seeds_spec: str,
    command: Sequence[str] = (),
) -> dict[str, Any]:
    """`config.json`: what identifies the run (compared on resume) plus volatile notes."""
    return {
        "textenvs_version": textenvs.__version__,
        "envs": {name: textenvs.get(name).load().version for name in plan.envs},
        "seeds": seeds_spec,
        "seed_list": plan.seeds,
        "episodes_per_seed": plan.episodes_per_seed,
        "max_invalid": plan.max_invalid,
        "env_options": plan.env_options,
        "agent": agent.config(),
        "agent_options": agent_options,
        "prices": prices,
        "python": platform.python_version(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "concurrency": plan.concurrency,
        "command": list(command),
        **({"trials": plan.trials} if plan.trials > 1 else {}),
    }


def episode_record(result: EpisodeResult, key: Key, model: str | None, trajectory: str) -> Record:
    """One `episodes.jsonl` line."""
    usage = result.usage
    prompt = int(usage.get("prompt_tokens", usage.get("prompt", 0)))
    completion = int(usage.get("completion_tokens", usage.get("completion", 0)))
    total = int(usage.get("total_tokens", usage.get("total", prompt + completion)))
    cached = int(usage.get("cached_tokens", 0))
    # the llm agent's prompts: characters sent, and those repeating the previous request
    chars = {key: int(usage.get(key, 0)) for key in ("prompt_chars", "prefix_chars")}
    return {
        "env": key[0],
        "seed": key[1],
        "episode": key[2],
        "agent": result.agent,
        "model": model,
        "outcome": result.outcome,
        "success": result.success,
        "return": result.total_reward,
        "steps": result.steps,
        "invalid_actions": result.invalid_actions,
        "reasks": result.reasks,
        "tokens": {"prompt": prompt, "completion": completion, "total": total, "cached": cached},
        **({"prompt_cache": chars} if chars["prompt_chars"] else {}),
        "latency_s": round(result.latency_s, 4),
        "wall_s": round(result.wall_s, 4),
        "error": result.error,
        "trajectory": trajectory,
        "skills": measure(key[0], key[1], result.to_dict()),
    }


class _Yielding(Agent):
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


Progress = Callable[[Record], None]
EnvFactory = Callable[[str], Any]


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


async def _play(
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
            _Yielding(agent),
            key[1],
            options=plan.env_options or None,
            max_invalid=plan.max_invalid,
        )
    except Exception as exc:
        return _crashed(key, agent.name if agent is not None else "?", exc)
    finally:
        if agent is not None:
            await agent.aclose()


async def _play_unit(
    env: TextEnv[Any, Any], factory: AgentFactory, unit: list[Key], plan: EvalPlan
) -> AsyncIterator[tuple[Key, EpisodeResult]]:
    """A unit's episodes as they end: one episode, or a trial group with one agent (a
    crash stops the group there, recorded on the trial it hit)."""
    if plan.trials == 1:
        yield unit[0], await _play(env, factory, unit[0], plan)
        return
    agent: Agent | None = None
    played = 0
    try:
        agent = factory()
        seeds = [key[1] for key in unit]
        options = plan.env_options or None
        group = trials.play_group(
            env, _Yielding(agent), seeds, options=options, max_invalid=plan.max_invalid
        )
        async for result in group:
            played += 1
            yield unit[played - 1], result
    except Exception as exc:
        yield unit[played], _crashed(unit[played], agent.name if agent else "?", exc)
    finally:
        if agent is not None:
            await agent.aclose()


def _crashed(key: Key, agent: str, exc: Exception, doing: str = "") -> EpisodeResult:
    error = f"{CRASHED}{doing}{type(exc).__name__}: {exc}"
    return EpisodeResult(env=key[0], seed=key[1], agent=agent, outcome=AGENT_ERROR, error=error)


class _Stop(Exception):
    """Raised by a worker when the fail-fast policy ends the run."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def run_eval(
    plan: EvalPlan,
    run_dir: Path,
    factory: AgentFactory,
    config: dict[str, Any],
    *,
    resume: bool = False,
    retry_errors: bool = False,
    fail_fast: FailFast | None = None,
    scrub: Callable[[Any], Any] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    on_episode: Progress | None = None,
    on_note: Callable[[str], None] | None = None,
    make_env: EnvFactory | None = None,
) -> dict[str, Any]:
    """Run every planned episode not yet in `run_dir`; returns the written summary, whose
    `stopped` names why `fail_fast` ended the run early (None when it did not).

    Holds the run directory's lock throughout (`store.RunDirError` when another process
    has it). `retry_errors` (with `resume`) plays the recorded agent errors again.
    `scrub` masks secrets in everything written (config, episode lines, trajectories);
    credentials are always masked structurally in the config.
    `on_start(total, already_done)` is called once, `on_episode(record)` per episode,
    `on_note(text)` for things worth telling (a lock taken over from a killed run).
    `make_env(name)` builds a blocking env to play instead of the local one (e.g.
    `textenvs.service.client.remote_env_factory(url)`); its steps run in threads.
    """
    scrub = scrub or (lambda value: value)
    config = scrub(redact_data(config))
    with store.RunLock(run_dir) as lock:
        if lock.previous_holder and on_note is not None:
            pid = lock.previous_holder.get("pid", "?")
            on_note(f"took over the lock of an earlier run that did not finish (pid {pid})")
        done = store.prepare(run_dir, config, resume=resume, retry_errors=retry_errors)
        stopped = await _run_todo(
            plan, run_dir, factory, config, done, fail_fast, scrub, on_start, on_episode, make_env
        )
        return write_summary(run_dir, config, stopped=stopped)


async def _run_todo(
    plan: EvalPlan,
    run_dir: Path,
    factory: AgentFactory,
    config: dict[str, Any],
    done: set[Key],
    fail_fast: FailFast | None,
    scrub: Callable[[Any], Any],
    on_start: Callable[[int, int], None] | None,
    on_episode: Progress | None,
    make_env: EnvFactory | None,
) -> str | None:
    """Play the planned episodes not in `done`; the fail-fast reason if it stopped them."""
    todo = [unit for unit in plan.units() if not set(unit) <= done]
    if on_start is not None:
        on_start(len(plan.planned()), len(plan.planned()) - sum(map(len, todo)))
    model = config["agent"].get("model")
    log = store.EpisodeLog(run_dir)
    queue: Iterator[list[Key]] = iter(todo)
    workers = max(1, min(plan.concurrency, len(todo)))
    executor = ThreadPoolExecutor(workers, "textenvs-env") if make_env is not None else None

    async def open_env(name: str) -> Any:
        if make_env is None or executor is None:
            return textenvs.make(name)
        loop = asyncio.get_running_loop()
        return ThreadedEnv(await loop.run_in_executor(executor, make_env, name), executor)

    async def worker() -> None:
        envs: dict[str, Any] = {}
        try:
            for unit in queue:  # a shared iterator: each unit goes to exactly one worker
                name = unit[0][0]
                if name not in envs:
                    try:
                        envs[name] = await open_env(name)
                    except Exception as exc:  # e.g. a lost service: this episode fails
                        crash = _crashed(unit[0], "?", exc, "cannot open the env: ")
                        await record(unit, unit[0], crash)
                        continue
                episodes = _play_unit(envs[name], factory, unit, plan)
                async with contextlib.aclosing(episodes):
                    async for key, result in episodes:
                        await record(unit, key, result)
        finally:
            for env in envs.values():  # a remote env deletes its session (an HTTP call)
                with contextlib.suppress(Exception):
                    if isinstance(env, ThreadedEnv):
                        await env._call(env.env.close)
                    else:
                        env.close()

    async def record(unit: list[Key], key: Key, result: EpisodeResult) -> None:
        place = trials.trial_fields(unit, key) if plan.trials > 1 else {}
        data = scrub({"key": list(key), "model": model, **place, **result.to_dict()})
        rel = await asyncio.to_thread(store.write_trajectory, run_dir, key, data)
        line = scrub({**episode_record(result, key, model, rel), **place})
        log.append(line)  # in the loop thread: lines never interleave
        await asyncio.to_thread(log.sync)  # fsyncs overlap with other episodes
        if on_episode is not None:
            on_episode(line)
        reason = fail_fast.observe(line) if fail_fast is not None else None
        if reason is not None:
            raise _Stop(reason)

    stopped = None
    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(workers):
                group.create_task(worker())
    except* _Stop as stop:
        stopped = str(stop.exceptions[0])
    finally:
        log.close()
        if executor is not None:
            executor.shutdown(wait=False)
    return stopped


def write_summary(
    run_dir: Path, config: dict[str, Any], *, stopped: str | None = None
) -> dict[str, Any]:
    """Recompute `summary.json` from every recorded episode and write it atomically."""
    records = store.read_episodes(run_dir)
    planned = store.planned_keys(config)
    summary = {
        "agent": config["agent"],
        "planned_episodes": len(planned),
        "recorded_episodes": len(records),
        "complete": planned <= {key_of(r) for r in records},
        "stopped": stopped,
        "by_env": summarize_by_env(records, config.get("prices")),
    }
    if config.get("trials", 1) > 1:
        summary["learning"] = learning_curves(records)
    store.write_json_atomic(run_dir / store.SUMMARY, summary)
    return summary


def default_command() -> list[str]:
    return ["textenvs", *sys.argv[1:]]
