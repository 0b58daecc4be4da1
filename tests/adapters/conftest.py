from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.support.openai_server import OpenAIServer
from benchmarks.support.scripted_replies import reply_for
from textenvs.cli import main
from textenvs.evals.store import read_episodes


@pytest.fixture
def model_server():
    with OpenAIServer(default=reply_for) as server:
        yield server


def textenvs_eval(server: OpenAIServer, out: Path, env: str, seeds: str, *extra: str) -> dict:
    """`textenvs eval` with the llm agent on `server`; (env, seed) -> episode record."""
    code = main(
        ["eval", "--env", env, "--seeds", seeds, "--agent", "llm", "--model", "test-model",
         "--base-url", server.base_url, "--out", str(out), *extra]
    )  # fmt: skip
    assert code == 0
    return {(r["env"], r["seed"]): r for r in read_episodes(out)}
