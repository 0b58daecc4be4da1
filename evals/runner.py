"""Batch evaluation: envs x seeds x episodes-per-seed with bounded asyncio concurrency.

C workers pull (env, seed, episode) keys from one queue, so at most C episodes (and so
at most C LLM calls) are in flight. Each worker plays its keys through a backend's
player (`players.py`): by default an `EpisodePlayer` on this event loop that owns its env
instances and builds a fresh agent per episode from the factory; `--backend ray` plays
them on Ray actors instead (`ray_backend.py`). This process alone writes the run folder.
What is played comes from an `EvalPlan` (`plan.py`); each finished episode's line is its
record (`records.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from textenvs.core.redact import redact_data
from textenvs.episodes.envs import EnvFactory
from textenvs.episodes.record import EpisodeResult
from textenvs.evals import run_folder, store, trials
from textenvs.evals.failures import FailFast
from textenvs.evals.learning import learning_curves
from textenvs.evals.metrics import Key, Record, key_of, summarize_by_env
from textenvs.evals.plan import EvalPlan
from textenvs.evals.players import AgentFactory, Backend, LocalBackend
from textenvs.evals.records import episode_record

Progress = Callable[[Record], None]


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

    # the task running this eval: cancelled (Ctrl-C), it says so at once, where its
    # workers hear of it only when the cancel reaches them, a loop pass or more later
    caller = asyncio.current_task()

    async def worker(index: int) -> None:
        player = backend.player(index)
        this_worker = asyncio.current_task()
        try:
            for batch in queue:  # a shared iterator: each key goes to exactly one worker
                if any(task is not None and task.cancelling() for task in (caller, this_worker)):
                    # a library that swallowed our cancel (3.11's wait_for does, when its
                    # reply lands in the same loop pass) must not play the rest of the queue
                    raise asyncio.CancelledError
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
        "by_env": summarize_by_env(
            records, config.get("prices"), env_options=config.get("env_options")
        ),
    }
    if config.get("trials", 1) > 1:
        summary["learning"] = learning_curves(records)
    store.write_json_atomic(run_dir / run_folder.SUMMARY, summary)
    return summary
