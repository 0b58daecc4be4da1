"""`textenvs run ENV --agent llm ...`, TOML agent files, and the embedded-model path."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

import textenvs
from benchmarks.support.openai_server import OpenAIServer, text
from tests.agents.conftest import KEY
from textenvs.agents.llm import LLMAgent, LLMConfig, local
from textenvs.cli import main
from textenvs.episodes.loop import run_episode


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(default=text("I will wait here.\nAction: wait")) as srv:
        yield srv


def test_run_prints_the_transcript_live(
    server: OpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.script(text("Action: east"))
    code = main(
        ["run", "treasure-hunt", "--seed", "1", "--agent", "llm", "--model", "test-model",
         "--base-url", server.base_url, "--history", "2", "--extra-body", '{"top_k": 5}']
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "agent llm" in out and "\n> east\n" in out and "\n> wait\n" in out
    assert "Outcome: timeout" in out
    assert len(server.requests) == textenvs.make("treasure-hunt").max_steps
    # the preflight found the model in the models list: every request is a turn
    assert all(r.body["top_k"] == 5 and r.body["model"] == "test-model" for r in server.requests)
    assert max(len(r.messages) for r in server.requests) == 1 + 2 * 2 + 1
    assert KEY not in out


def test_agent_config_file_with_flag_overrides(server: OpenAIServer, tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(
        "[agent]\nname = 'llm'\nmodel = 'from-file'\n"
        f"base_url = '{server.base_url}'\ntemperature = 0.5\nmax_tokens = 32\n"
        "history = 1\n[agent.extra_body]\nmin_p = 0.1\n"
    )
    code = main(
        ["run", "treasure-hunt", "--seed", "2", "--agent", "llm", "--agent-config", str(path),
         "--temperature", "0"]
    )  # fmt: skip
    assert code == 0
    body = server.requests[-1].body  # the first is the preflight's (model not listed)
    assert (body["model"], body["temperature"], body["max_tokens"], body["min_p"]) == (
        "from-file", 0.0, 32, 0.1,
    )  # fmt: skip


def test_config_round_trips_through_toml(tmp_path: Path) -> None:
    cfg = LLMConfig(
        model="m",
        base_url="http://127.0.0.1:9/v1",
        action_mode="tools",
        reasks=2,
        observations="changes",
    )
    lines = [f"{k} = {v!r}" for k, v in cfg.public().items() if v is not None and v != {}]
    path = tmp_path / "a.toml"
    path.write_text("\n".join(lines).replace("True", "true").replace("False", "false") + "\n")
    assert LLMConfig.load(path) == cfg


def test_bad_settings_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("model = 'm'\ntemprature = 0.1\n")
    with pytest.raises(SystemExit, match="temprature"):
        main(["run", "treasure-hunt", "--agent", "llm", "--agent-config", str(path)])
    with pytest.raises(SystemExit, match="needs --model"):
        main(["run", "treasure-hunt", "--agent", "llm"])
    with pytest.raises(SystemExit):
        main(["run", "treasure-hunt", "--agent", "llm", "--model", "m", "--extra-body", "[1]"])


def test_local_model_without_the_extra_is_a_clear_agent_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(local.MODEL_ENV, str(tmp_path / "missing.gguf"))
    agent = LLMAgent(model="local")
    assert agent.cfg.is_local
    result = asyncio.run(run_episode(textenvs.make("treasure-hunt"), agent, 0))
    assert result.outcome == "agent_error" and "missing.gguf is not a file" in (result.error or "")


def test_eval_says_what_a_model_whose_replies_are_all_unreadable_will_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAIServer(default=text("I am standing on a tile of the grid.")) as server:
        code = main(
            ["eval", "--env", "treasure-hunt", "--agent", "llm", "--model", "test-model",
             "--base-url", server.base_url, "--seeds", "0-2", "--reasks", "0",
             "--out", str(tmp_path / "run")]
        )  # fmt: skip
    err = " ".join(capsys.readouterr().err.split())  # rich wraps lines at 80 columns
    assert code == 0
    steps = textenvs.make("treasure-hunt").max_steps
    assert f"note: every reply of the first episode was unreadable ({steps} of {steps}, " in err
    assert "at that pace the 2 episodes left take about 0.0 h" in err
    assert err.count("every reply of the first episode") == 1  # said once, not each episode
