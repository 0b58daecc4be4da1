"""Playing episodes through Inspect's solver and the verifiers environment against the
loopback model (what the one-conversation tests compare with `textenvs eval`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

import textenvs
from benchmarks.support.openai_server import OpenAIServer
from benchmarks.support.verifiers_eval import vf_eval
from textenvs.adapters.inspect import scenario_task

MODEL = "openai-api/loopback/test-model"


def via_inspect(server: OpenAIServer, tmp: Path, envs: str, seeds: str,
                settings: dict[str, Any]) -> None:  # fmt: skip
    task = scenario_task(envs, seeds, **settings)  # type: ignore[arg-type]
    # a model of its own: Inspect keeps models by name, and an earlier server is gone
    model = get_model(MODEL, base_url=server.base_url, api_key="test-key", memoize=False)
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp), display="none", max_samples=1)
    assert log.status == "success"


def via_verifiers(server: OpenAIServer, tmp: Path, envs: str, seeds: str,
                  settings: dict[str, Any]) -> None:  # fmt: skip
    env = textenvs.load_environment(env=envs, seeds=seeds, **settings)
    # in-process: the requests are the same in verifiers' worker pool, and
    # test_verifiers.py plays through the pool
    episodes = vf_eval(env.config, server, tmp, concurrency=1, served=False)
    assert len(episodes) == len(list(env.taskset))
    assert all(trace.ok for episode in episodes for trace in episode.traces)
