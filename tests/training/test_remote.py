"""Training against a `textenvs serve` service through the one remote env
(`service.client.RemoteEnv`, as `textenvs eval --env-url` plays): the same episodes as
in-process envs, and a service of another version refused before the first episode."""

from __future__ import annotations

import pytest
import torch

import textenvs
from tests.support.other_version import OTHER_VERSION, other_version_service
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.cli import main
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference.chat import ChatTokens
from textenvs.inference.generation import Sampling
from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread
from textenvs.service.client import remote_env_factory
from textenvs.training import curve
from textenvs.training.rollouts import play


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
    remote = play_with(tiny, remote_env_factory(service))
    assert [r.completion_ids for r in remote] == [r.completion_ids for r in local]
    assert [untimed(r.result.to_dict()) for r in remote] == [
        untimed(r.result.to_dict()) for r in local
    ]
    assert all(r.result.wall_s > 0 for r in remote)  # timed, as eval times its episodes


def untimed(record: dict) -> dict:
    """An episode record without its timings (the rest is a function of the seeds)."""
    turns = [{k: v for k, v in turn.items() if k != "latency_s"} for turn in record["turns"]]
    return {k: v for k, v in record.items() if k not in ("latency_s", "wall_s")} | {"turns": turns}


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


def test_a_service_of_another_version_is_refused_before_anything_is_written(
    tiny_dir, tmp_path, capsys
):
    out = tmp_path / "run"
    with other_version_service() as url, pytest.raises(SystemExit) as refused:
        main(
            ["train", "--env", "treasure-hunt", "--model", str(tiny_dir), "--out", str(out),
             "--env-url", url, "--steps", "1"]
        )  # fmt: skip
    assert refused.value.code == 2 and not out.exists()
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"serves treasure-hunt v{OTHER_VERSION}, this install v" in line
    assert "upgrade textenvs on the client or the server" in line
