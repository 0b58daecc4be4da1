"""Training against a `textenvs serve` service through OpenEnv's own client: the same
episodes as in-process envs."""

from __future__ import annotations

import pytest
import torch

import textenvs
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.cli import main
from textenvs.episodes.specs import EpisodeSpec
from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread
from textenvs.training import curve
from textenvs.training.chat import ChatTokens
from textenvs.training.generation import Sampling
from textenvs.training.remote import openenv_factory
from textenvs.training.rollouts import play

pytest.importorskip("openenv.core")


@pytest.fixture(scope="module")
def service():
    with serve_in_thread(create_app(max_sessions=50)) as url:
        yield url


def play_with(tiny, make_env) -> list:
    model, tokenizer = tiny
    specs = [EpisodeSpec("treasure-hunt", seed) for seed in (2, 2, 9)]
    return play(
        model,
        ChatTokens(tokenizer),
        specs,
        make_env,
        conversation_settings(prompt_budget=7000),
        Sampling(max_new_tokens=10),
        max_turns=4,
        generator=torch.Generator().manual_seed(4),
    )


def test_episodes_on_the_service_are_those_played_in_process(tiny, service):
    local = play_with(tiny, textenvs.make)
    remote = play_with(tiny, openenv_factory(service))
    assert [r.completion_ids for r in remote] == [r.completion_ids for r in local]
    assert [r.result.to_dict() for r in remote] == [r.result.to_dict() for r in local]


@pytest.mark.slow
def test_train_runs_on_the_service(tiny_dir, service, tmp_path):
    out = tmp_path / "run"
    code = main(
        ["train", "--env", "treasure-hunt", "--model", str(tiny_dir), "--out", str(out),
         "--env-url", service, "--steps", "1", "--max-turns", "2", "--group-size", "2",
         "--seeds-per-step", "1", "--max-tokens", "8"]
    )  # fmt: skip
    assert code == 0
    (row,) = curve.read(out)
    assert row["episodes"] == 2


def test_a_service_of_another_version_is_refused(service, monkeypatch):
    from textenvs.training import remote

    # The install, not the service (which runs in this process), becomes another version
    class Newer:
        version = "999"

    class Entry:
        def load(self) -> type:
            return Newer

    monkeypatch.setattr(remote, "registry_get", lambda name: Entry())
    with pytest.raises(ValueError, match="serves treasure-hunt"):
        openenv_factory(service)("treasure-hunt")
