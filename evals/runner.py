"""Batch evaluation: envs x seeds x episodes-per-seed with bounded asyncio concurrency.

C workers pull (env, seed, episode) keys from one queue, so at most C episodes (and so
at most C LLM calls) are in flight. Each worker plays its keys through a backend's
player: by default an `EpisodePlayer` on this event loop that owns its env instances and
builds a fresh agent per episode from the factory; `--backend ray` plays them on Ray
actors instead (`ray_backend.py`). This process alone writes the run folder. Agents that
only compute never await; a thin wrapper hands the loop back every few milliseconds so
the progress display and the other episodes keep moving.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import platform
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import textenvs
from textenvs.agents.base import Agent, Decision, EpisodeContext, EpisodeEnd
from textenvs.core.env import TextEnv
from textenvs.core.parsing import excerpt
from textenvs.core.redact import redact_data
from textenvs.evals import store, trials
from textenvs.evals.episode import AGENT_ERROR, EpisodeResult, run_episode
from textenvs.evals.failures import CRASHED, FailFast
from textenvs.evals.learning import learning_curves
from textenvs.evals.metrics import Key, Record, key_of, summarize_by_env
from textenvs.evals.skills import measure

AgentFactory = Callable[[], Agent]
YIELD_EVERY_S = 0.005  # a CPU-bound agent gives the loop back at least this often


MAX_SEEDS = 1_000_000  # a run of more would not finish; its seed list alone is 8 MB+
MAX_SEED = 2**63 - 1


def parse_seeds(spec: str) -> list[int]:
    """`"0-99"`, `"3"`, `"0-4,10,20-22"` -> sorted unique seeds (at most `MAX_SEEDS`, each
    below 2**63: checked before any range is expanded)."""
    ranges: list[tuple[int, int]] = []
    for part in spec.replace(" ", "").split(","):
        match = re.fullmatch(r"(\d{1,19})(?:-(\d{1,19}))?", part)
        if not match:
            raise ValueError(f"bad seed range '{part}': use N, N-M or a comma list of those")
        lo, hi = int(match[1]), int(match[2] or match[1])
        if hi < lo:
            raise ValueError(f"bad seed range '{part}': {hi} < {lo}")
        if hi > MAX_SEED:
            raise ValueError(f"bad seed range '{part}': seeds go up to {MAX_SEED}")
        ranges.append((lo, hi))
    if sum(hi - lo + 1 for lo, hi in ranges) > MAX_SEEDS:
        raise ValueError(f"'{excerpt(spec, 40)}' names over {MAX_SEEDS:,} seeds: give fewer")
    return sorted({seed for lo, hi in ranges for seed in range(lo, hi + 1)})


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
    backend: Backend | None = None,
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
    `backend` plays the episodes elsewhere (e.g. `ray_backend.RayBackend`); by default a
    `LocalBackend` plays them here. Either way this process writes every file.
    """
    backend = backend or LocalBackend(plan, factory, make_env)
    scrub = scrub or (lambda value: value)
    config = scrub(redact_data(config))
    with store.RunLock(run_dir) as lock:
        if lock.previous_holder and on_note is not None:
            pid = lock.previous_holder.get("pid", "?")
            on_note(f"took over the lock of an earlier run that did not finish (pid {pid})")
        done = store.prepare(run_dir, config, resume=resume, retry_errors=retry_errors)
        stopped = await _run_todo(
            plan, run_dir, backend, config, done, fail_fast, scrub, on_start, on_episode
        )
        return write_summary(run_dir, config, stopped=stopped)


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
        return await _play(env, self.factory, key, self.plan)

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
                _Yielding(agent),
                [key[1] for key in keys],
                options=self.plan.env_options or None,
                max_invalid=self.plan.max_invalid,
            )
            async for result in group:
                results.append(result)
        except Exception as exc:
            key = keys[len(results)]
            results.append(_crashed(key, agent.name if agent is not None else "?", exc))
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
                return _crashed(key, "?", exc, "cannot open the env: ")
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


async def _run_todo(
    plan: EvalPlan,
    run_dir: Path,
    backend: Backend,
    config: dict[str, Any],
    done: set[Key],
    fail_fast: FailFast | None,
    scrub: Callable[[Any], Any],
    on_start: Callable[[int, int], None] | None,
    on_episode: Progress | None,
) -> str | None:
    """Play the planned episodes not in `done`; the fail-fast reason if it stopped them."""
    todo = [unit for unit in plan.units() if not set(unit) <= done]
    if on_start is not None:
        on_start(len(plan.planned()), len(plan.planned()) - sum(map(len, todo)))
    if not todo:
        return None
    model = config["agent"].get("model")
    log = store.EpisodeLog(run_dir)
    workers = max(1, min(plan.concurrency, len(todo)))
    if plan.trials > 1:
        groups = todo  # a trial group is played whole, in order, by one agent
    else:
        # groups small enough that every worker gets several (the last ones finish together)
        keys = [unit[0] for unit in todo]
        size = max(1, min(backend.max_group, len(keys) // (4 * workers)))
        groups = [keys[i : i + size] for i in range(0, len(keys), size)]
    queue: Iterator[list[Key]] = iter(groups)

    async def worker(index: int) -> None:
        player = backend.player(index)
        try:
            for batch in queue:  # a shared iterator: each key goes to exactly one worker
                # a trial group stopped by a crash returns fewer results than keys
                for key, result in zip(batch, await player.play(batch), strict=False):
                    await record(batch, key, result)
        finally:
            await player.close()

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
    backend.start()
    try:
        async with asyncio.TaskGroup() as group:
            for index in range(workers):
                group.create_task(worker(index))
    except* _Stop as stop:
        stopped = str(stop.exceptions[0])
    finally:
        log.close()
        backend.stop()
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
