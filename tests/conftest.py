"""Shared test helpers."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

import textenvs
from textenvs.agents import make_agent
from textenvs.episodes.loop import run_episode
from textenvs.episodes.record import EpisodeResult

ENV_NAMES = textenvs.names()

# Ray's test clusters stay on loopback: on Linux Ray otherwise registers every node (and
# connects its processes) under the machine's network address even when told 127.0.0.1.
# Ray reads this when it is imported, so it is set before any test imports it.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

# torch on one thread a process: `-n auto` runs a worker a core, and tiny models on two
# threads each oversubscribe the cores (a tiny model's fitting took 10.6 s at 2 threads and
# 2.6 s at 1 beside a busy core). Set before torch is imported, so children inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# Property tests: the default profile keeps the everyday run short and repeatable (the
# same examples in every run and every xdist worker); `--hypothesis-profile thorough`
# runs each property test with the example count written on it, random examples included.
FAST_EXAMPLES = 25
settings.register_profile("default", max_examples=FAST_EXAMPLES, deadline=None, derandomize=True)
settings.register_profile("thorough", deadline=None)
settings.load_profile("default")


def is_thorough(config: pytest.Config) -> bool:
    return config.getoption("hypothesis_profile", None) not in (None, "default")


@pytest.fixture
def thorough(request: pytest.FixtureRequest) -> bool:
    """True under `--hypothesis-profile thorough`: property runs at full size."""
    return is_thorough(request.config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the default profile, cap the example counts that tests set themselves."""
    if is_thorough(config):
        return
    for item in items:
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)  # set by @settings
        if isinstance(own, settings) and own.max_examples > FAST_EXAMPLES:
            capped = settings(own, max_examples=FAST_EXAMPLES, derandomize=True)
            test._hypothesis_internal_use_settings = capped  # type: ignore[union-attr]


def play(env_name: str, agent_name: str, seed: int, **options: Any) -> EpisodeResult:
    env = textenvs.make(env_name)
    return asyncio.run(run_episode(env, make_agent(agent_name), seed, options=options or None))


def transcript_digest(result: EpisodeResult) -> str:
    """A hash of everything an episode showed and did (wall-clock fields excluded)."""
    turns = [(t.observation, t.command, t.reward, t.invalid_action, t.events) for t in result.turns]
    blob = json.dumps([turns, result.final_observation, result.outcome], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


@pytest.fixture(params=ENV_NAMES)
def env_name(request: pytest.FixtureRequest) -> str:
    return request.param


GOLDEN_DIR = Path(__file__).parent / "scenarios" / "golden"


def render_transcript(result: EpisodeResult) -> str:
    """A readable transcript: each observation, the command sent, rewards, the outcome."""
    parts = []
    for turn in result.turns:
        parts.append(turn.observation)
        parts.append(f"> {turn.command}" + (f"   [reward {turn.reward:+g}]" if turn.reward else ""))
    parts.append(result.final_observation)
    parts.append(f"outcome={result.outcome} return={result.total_reward:g} steps={result.steps}")
    return "\n\n".join(parts) + "\n"


def assert_golden(name: str, text: str) -> None:
    """Compare with tests/scenarios/golden/<name>.txt; TEXTENVS_UPDATE_GOLDEN=1 rewrites it."""
    path = GOLDEN_DIR / f"{name}.txt"
    if os.environ.get("TEXTENVS_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; run with TEXTENVS_UPDATE_GOLDEN=1 once"
    assert text == path.read_text(encoding="utf-8"), f"transcript differs from {path}"
