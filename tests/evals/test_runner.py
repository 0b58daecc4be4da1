"""The eval runner in-process: storage, resume, outcomes, bounded concurrency."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from textenvs.agents import make_agent
from textenvs.episodes.protocol import Agent, Decision
from textenvs.episodes.specs import parse_seeds, resolve_envs
from textenvs.evals import run_folder, runner, store
from textenvs.evals.metrics import key_of
from textenvs.evals.plan import EvalPlan, build_config

ENV = "treasure-hunt"  # the reference scenario; other scenarios are covered by the CLI test


def plan_and_config(agent: Agent, **plan: Any) -> tuple[EvalPlan, dict[str, Any]]:
    p = EvalPlan(envs=[ENV], seeds=plan.pop("seeds", [0, 1, 2]), **plan)
    cfg = build_config(p, agent, agent_options={}, prices=None, seeds_spec="test")
    return p, cfg


def run(tmp: Path, factory: Any, resume: bool = False, **plan: Any) -> dict[str, Any]:
    p, cfg = plan_and_config(factory(), **plan)
    return asyncio.run(runner.run_eval(p, tmp, factory, cfg, resume=resume))


def test_parse_seeds() -> None:
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("5") == [5]
    assert parse_seeds("10, 0-2") == [0, 1, 2, 10]
    for bad in ("3-1", "a", "1-", "", "0-2,1"):
        with pytest.raises(ValueError):
            parse_seeds(bad)


def test_seed_ranges_are_read_back_as_the_same_seeds() -> None:
    from textenvs.episodes.specs import seed_ranges

    for seeds in ([0, 1, 2, 5], [7], [1, 3, 5, 6], list(range(1000, 10000))):
        assert parse_seeds(seed_ranges(seeds)) == seeds
    assert seed_ranges([5, 0, 1, 2, 2]) == "0-2,5"


def test_all_means_every_registered_scenario() -> None:
    import textenvs

    assert resolve_envs("all") == textenvs.names()


def test_files_and_summary(tmp_path: Path) -> None:
    summary = run(tmp_path, lambda: make_agent("random"), episodes_per_seed=2)
    records = store.read_episodes(tmp_path)
    assert sorted(key_of(r) for r in records) == [(ENV, s, k) for s in range(3) for k in range(2)]
    for r in records:
        data = json.loads((tmp_path / r["trajectory"]).read_text())
        assert data["steps"] == r["steps"] == len(data["turns"])
        for turn in data["turns"]:  # what was sent, and what it was read as (or why not)
            assert turn["raw"] == turn["command"]
            assert (turn["read_as"] is None) == turn["invalid_action"] == bool(turn["error"])
    on_disk = json.loads((tmp_path / run_folder.SUMMARY).read_text())
    assert on_disk == summary and summary["complete"]
    s = summary["by_env"][ENV]
    assert s["episodes"] == 6 and s["successes"] == sum(r["success"] for r in records)
    config = json.loads((tmp_path / run_folder.CONFIG).read_text())
    assert list(config["envs"]) == [ENV]
    assert config["seed_list"] == [0, 1, 2] and config["agent"]["name"] == "random"


def test_resume_repairs_torn_line_and_reruns_only_missing(tmp_path: Path) -> None:
    run(tmp_path, lambda: make_agent("random"), seeds=list(range(6)))
    path = tmp_path / run_folder.EPISODES
    lines = path.read_bytes().splitlines(keepends=True)
    # Simulate a kill: two episodes lost, the next one half-written.
    path.write_bytes(b"".join(lines[:3]) + lines[3][:25])
    assert len(store.read_episodes(tmp_path)) == 3  # the torn tail is ignored
    run(tmp_path, lambda: make_agent("random"), resume=True, seeds=list(range(6)))
    keys = Counter(key_of(r) for r in store.read_episodes(tmp_path))
    assert keys == Counter({(ENV, s, 0): 1 for s in range(6)})
    assert path.read_bytes().endswith(b"\n")


def test_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    (tmp_path / run_folder.EPISODES).write_text('{"env": 1}\nnot json\n{"env": 2}\n')
    with pytest.raises(store.RunDirError, match="line 2"):
        store.read_episodes(tmp_path)


def test_resume_refuses_a_different_config(tmp_path: Path) -> None:
    run(tmp_path, lambda: make_agent("random"), seeds=[0])
    with pytest.raises(store.RunDirError, match=r"max_invalid, seed_list"):
        run(tmp_path, lambda: make_agent("random"), resume=True, seeds=[0, 1], max_invalid=2)
    with pytest.raises(store.RunDirError, match=r"agent\.name"):
        run(tmp_path, lambda: make_agent("scripted"), resume=True, seeds=[0])
    with pytest.raises(store.RunDirError, match="--resume"):
        run(tmp_path, lambda: make_agent("random"), seeds=[0])
    # concurrency is not part of a run's identity
    run(tmp_path, lambda: make_agent("random"), resume=True, seeds=[0], concurrency=3)


def test_the_embedded_models_threads_are_not_part_of_a_runs_identity() -> None:
    old = {"agent": {"local_threads": 1, "temperature": 0.0}, "agent_options": {"local_threads": 1}}
    new = {"agent": {"local_threads": 2, "temperature": 0.0}, "agent_options": {"local_threads": 2}}
    assert store.config_differences(old, new) == []
    new["agent"]["temperature"] = 1.0
    assert store.config_differences(old, new) == ["agent.temperature"]


class Garbage(Agent):
    name = "garbage"

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        return Decision("xyzzy plugh")


class Crashing(Agent):
    name = "crashing"

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        raise RuntimeError("model exploded")


class Overflowing(Agent):
    name = "overflowing"

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        return Decision("", outcome="context_overflow", error="prompt of 9000 tokens > 8192")


def test_outcomes_are_classified(tmp_path: Path) -> None:
    limited = run(tmp_path / "a", Garbage, max_invalid=3)["by_env"][ENV]
    assert limited["outcomes"] == {"invalid_limit": 3}
    assert limited["mean_steps"] == 3 and limited["invalid_action_rate"] == 1.0
    no_limit = run(tmp_path / "b", Garbage)["by_env"][ENV]
    assert no_limit["outcomes"] == {"timeout": 3}
    crashed = run(tmp_path / "c", Crashing)["by_env"][ENV]
    assert crashed["outcomes"] == {"agent_error": 3} and crashed["scored_episodes"] == 0
    errors = {r["error"] for r in store.read_episodes(tmp_path / "c")}
    assert errors == {"RuntimeError: model exploded"}
    overflow = run(tmp_path / "d", Overflowing)["by_env"][ENV]
    assert overflow["outcomes"] == {"context_overflow": 3} and overflow["successes"] == 0


class Slow(Agent):
    """Waits like a network call; counts how many episodes are in flight."""

    name = "slow"
    in_flight = 0
    peak = 0

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        Slow.in_flight += 1
        Slow.peak = max(Slow.peak, Slow.in_flight)
        await asyncio.sleep(0.002)
        Slow.in_flight -= 1
        return Decision("garbage")


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    Slow.peak = 0
    summary = run(tmp_path, Slow, seeds=list(range(8)), concurrency=3, max_invalid=2)
    assert summary["recorded_episodes"] == 8
    assert Slow.peak == 3


class SwallowsCancels(Agent):
    """Like a client library that loses a cancel (3.11's `wait_for` when the reply lands
    with it): the reply comes back as if nothing had happened."""

    name = "swallows-cancels"

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0.002)
        return Decision("garbage")


def test_a_cancelled_run_plays_no_new_episode_even_if_an_agent_swallows_the_cancel(
    tmp_path: Path,
) -> None:
    p, cfg = plan_and_config(SwallowsCancels(), seeds=list(range(40)), concurrency=2, max_invalid=2)

    async def main() -> None:
        run = asyncio.create_task(
            runner.run_eval(p, tmp_path, SwallowsCancels, cfg, on_episode=lambda _: run.cancel())
        )
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(main())
    # the episodes in flight when the cancel came finish (their agents ignored it); no
    # worker takes another, however many loop passes the cancel takes to reach it
    assert len(store.read_episodes(tmp_path)) <= 2
