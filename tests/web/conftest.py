"""Shared pieces of the play-page tests: a recording server and a reference episode."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import textenvs
from textenvs.agents import make_agent
from textenvs.episodes.loop import run_episode
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext
from textenvs.episodes.record import EpisodeResult
from textenvs.play.page import create_app
from textenvs.play.players import parse_baseline_set
from textenvs.play.record import HumanRecorder
from textenvs.service.background import serve_in_thread

UNREADABLE = "dance wildly around the room"
PILOT_SEEDS = (3, 4)


class UnreadableFirst(Agent):
    """The scripted agent, after one command no scenario can read (a wasted turn)."""

    name = "scripted"

    def __init__(self) -> None:
        self.inner = make_agent("scripted")
        self.first = True

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        self.inner.reset(context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        if self.first:
            self.first = False
            return Decision(UNREADABLE)
        return await self.inner.act(observation, info)


def reference_episode(env_name: str, seed: int) -> EpisodeResult:
    """What a player who types `UNREADABLE` and then the scripted agent's commands sees.
    (Played in a thread of its own: Playwright's sync API holds this thread's loop.)"""
    env = textenvs.make(env_name)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run_episode(env, UnreadableFirst(), seed)).result()


@pytest.fixture(scope="module")
def record_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("human-runs")


@pytest.fixture(scope="module")
def url(record_dir: Path) -> Iterator[str]:
    recorder = HumanRecorder(record_dir, [parse_baseline_set("pilot=3-4")])
    with serve_in_thread(create_app(max_sessions=100, recorder=recorder)) as base:
        yield base


def read_run(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    config = json.loads((run_dir / "config.json").read_text())
    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    return config, [json.loads(line) for line in lines]
