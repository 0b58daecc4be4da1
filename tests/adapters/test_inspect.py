"""The Inspect tasks, run for real (the `inspect` CLI and `inspect_ai.eval`) against the
loopback OpenAI-protocol server, give the same outcomes as `textenvs eval`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import get_model

import textenvs
from benchmarks.support.openai_server import (
    OpenAIServer,
    RecordedRequest,
    Reply,
    http_error,
    tool_call,
)
from benchmarks.support.scripted_replies import reply_for
from tests.adapters.conftest import textenvs_eval
from textenvs.adapters.inspect import scenario_task
from textenvs.adapters.inspect.solver import fenced
from textenvs.evals.metrics import summarize_by_env

MODEL = "openai-api/loopback/test-model"  # Inspect's provider for OpenAI-compatible servers


def loopback_env(server: OpenAIServer) -> dict[str, str]:
    return {"LOOPBACK_BASE_URL": server.base_url, "LOOPBACK_API_KEY": "test-key"}


@pytest.mark.slow
def test_inspect_cli_matches_textenvs_eval(model_server: OpenAIServer, tmp_path: Path) -> None:
    seeds = "3-8"
    logs = tmp_path / "logs"
    inspect_cli = Path(sys.executable).parent / "inspect"
    run = subprocess.run(
        [str(inspect_cli), "eval", "textenvs/em-anomaly", "--model", MODEL, "-T",
         f"seeds={seeds}", "--log-dir", str(logs), "--display", "none"],
        cwd=tmp_path,  # not the repository: the installed package is what Inspect finds
        env={**os.environ, **loopback_env(model_server)},
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    inspect_requests = len(model_server.requests)
    (log_info,) = list_eval_logs(str(logs))
    log = read_eval_log(log_info)
    assert log.status == "success"
    assert (log.eval.task, log.eval.task_registry_name) == ("em-anomaly", "textenvs/em-anomaly")

    # the same conversation as `textenvs eval`, with the same defaults
    expected = textenvs_eval(model_server, tmp_path / "run", "em-anomaly", seeds)
    assert len(model_server.requests) == 2 * inspect_requests  # the same replies, asked again
    assert log.samples is not None and len(log.samples) == len(expected) == 6
    outcomes = set()
    for sample in log.samples:
        record = expected[("em-anomaly", sample.metadata["seed"])]
        (score,) = sample.scores.values()
        assert score.answer == record["outcome"]
        assert score.value == {
            "success": float(record["success"]),
            "return": record["return"],
            "steps": float(record["steps"]),
            "invalid_actions": float(record["invalid_actions"]),
        }
        assert sample.messages[0].role == "system"
        assert sample.messages[1].text == fenced(sample.input)  # the first observation
        outcomes.add(record["outcome"])
    # the replies exercised re-asks, wasted turns and more than one way to end
    assert sum(r["reasks"] for r in expected.values()) > 0
    assert sum(r["invalid_actions"] for r in expected.values()) > 0
    assert len(outcomes) >= 2
    metrics = {score.name: score.metrics for score in log.results.scores}
    mean, all_mean = "textenvs/scenario_mean_em-anomaly", "textenvs/scenario_mean_all"
    success, steps = metrics["success"], metrics["steps"]
    assert success[mean].value == pytest.approx(sum(r["success"] for r in expected.values()) / 6)
    assert all_mean in success and all_mean not in steps  # steps are never pooled
    assert steps[mean].value == pytest.approx(sum(r["steps"] for r in expected.values()) / 6)
    assert steps["textenvs/scenario_stderr_em-anomaly"].value > 0
    summary = summarize_by_env(expected.values())["em-anomaly"]
    scenario = {m.name: m.value for m in metrics["episode_outcome"].values()}
    assert scenario["em-anomaly_normalised"] == pytest.approx(summary["normalised"])
    assert scenario["em-anomaly_marks_far"] == summary["skills"]["marks_far"]


@pytest.mark.slow
def test_all_task_has_every_scenario_and_model_errors_fail_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = scenario_task("all", seeds=[3])
    assert [s.id for s in task.dataset] == [f"{name}-3" for name in textenvs.names()]
    with OpenAIServer(default=http_error(400, "bad request")) as server:
        for key, value in loopback_env(server).items():
            monkeypatch.setenv(key, value)
        (log,) = inspect_eval(
            scenario_task("treasure-hunt", seeds="0-1"), model=MODEL, log_dir=str(tmp_path),
            display="none", fail_on_error=False,
        )  # fmt: skip
    assert log.samples is not None and len(log.samples) == 2
    assert all(sample.error is not None and not sample.scores for sample in log.samples)


def test_bad_task_arguments_fail_with_a_message() -> None:
    with pytest.raises(ValueError, match="seed range"):
        scenario_task("treasure-hunt", seeds="9-1")
    with pytest.raises(ValueError, match="single scenario"):
        scenario_task("all", seeds="0", options={"level": 2})
    for mode in ("play", "tools"):  # a misspelt `-T` conversation setting is never ignored
        with pytest.raises(ValueError, match="unknown conversation settings: histroy"):
            scenario_task("treasure-hunt", seeds="0", mode=mode, histroy=3)


@pytest.mark.slow
def test_all_task_reports_normalised_scores(tmp_path: Path) -> None:
    with OpenAIServer(default=reply_for) as server:
        model = get_model(MODEL, base_url=server.base_url, api_key="k", memoize=False)
        (log,) = inspect_eval(scenario_task("all", seeds="0"), model=model,
                              log_dir=str(tmp_path), display="none")  # fmt: skip
    assert log.status == "success" and log.results is not None
    metrics = {score.name: score.metrics for score in log.results.scores}
    scenario = {m.name: m.value for m in metrics["episode_outcome"].values()}
    normalised = [scenario[f"{name}_normalised"] for name in textenvs.names()]
    assert scenario["all_normalised"] == pytest.approx(sum(normalised) / len(normalised))
    assert "treasure-hunt_expected_success" in scenario and "megacity_violation_steps" in scenario
    returns = {m.name for m in metrics["return"].values()}
    assert returns == set(textenvs.names())  # one per scenario, no pooled "all"


@pytest.mark.slow
def test_a_level_reaches_the_episode_and_labels_its_score(tmp_path: Path) -> None:
    task = scenario_task("megacity", seeds="0", options={"level": 3})
    (sample,) = task.dataset
    assert sample.input == textenvs.make("megacity").reset(seed=0, options={"level": 3})[0]
    with OpenAIServer(default=reply_for) as server:
        model = get_model(MODEL, base_url=server.base_url, api_key="k", memoize=False)
        (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none")
    assert log.status == "success" and log.results is not None
    metrics = {score.name: score.metrics for score in log.results.scores}
    scenario = {m.name: m.value for m in metrics["episode_outcome"].values()}
    assert scenario["megacity_level"] == 3
    assert log.samples is not None
    assert log.samples[0].scores["episode_outcome"].metadata["record"]["level"] == 3


@pytest.mark.slow
def test_inspect_list_tasks_finds_every_task() -> None:
    import textenvs.adapters.inspect as adapter

    inspect_cli = Path(sys.executable).parent / "inspect"
    run = subprocess.run([str(inspect_cli), "list", "tasks"], cwd=Path(adapter.__file__).parent,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    listed = {line.split("@")[1] for line in run.stdout.split()}
    assert listed == {*textenvs.names(), "all"}


def tool_player(request: RecordedRequest) -> Reply:
    """A model that sends a few commands through the `env_command` tool, then submits."""
    names = {tool["function"]["name"] for tool in request.body.get("tools", [])}
    assert {"env_command", "submit"} <= names
    sent = sum(1 for m in request.messages if m.get("role") == "tool")
    if sent < 4:
        return tool_call({"command": ("north", "east", "hmm", "south")[sent]}, name="env_command")
    return tool_call({"answer": "done"}, name="submit")


def test_tools_mode_lets_an_inspect_agent_play(tmp_path: Path) -> None:
    with OpenAIServer(default=tool_player) as server:
        model = get_model(MODEL, base_url=server.base_url, api_key="k", memoize=False)
        task = scenario_task("treasure-hunt", seeds="1-2", mode="tools")  # react() by default
        (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path), display="none")
    assert log.status == "success" and log.samples is not None
    outcomes = set()
    for sample in log.samples:
        (score,) = sample.scores.values()
        expected = replayed_episode(sample.metadata["seed"], ["north", "east", "hmm", "south"])
        assert score.answer == expected.outcome
        assert score.value["steps"] == expected.steps
        assert score.value["invalid_actions"] == expected.invalid_actions
        assert score.value["return"] == expected.total_reward
        tool_results = [m.text for m in sample.messages if m.role == "tool"]
        assert len(tool_results) == 4  # the env's answers (submitting ends the agent)
        if expected.steps >= 3:
            assert tool_results[2].startswith("Invalid command")  # "hmm": a wasted turn
        else:
            assert "The episode is over" in tool_results[-1]
        outcomes.add(expected.outcome)
    assert "unfinished" in outcomes


def replayed_episode(seed: int, commands: list[str]) -> SimpleNamespace:
    """The same commands played straight on the env."""
    env = textenvs.make("treasure-hunt")
    env.reset(seed=seed)
    result = SimpleNamespace(steps=0, invalid_actions=0, total_reward=0.0)
    for command in commands:
        _, reward, terminated, truncated, info = env.step(command)
        result.steps, result.total_reward = info["steps_used"], result.total_reward + reward
        result.invalid_actions += int(info["invalid_action"])
        if terminated or truncated:
            result.outcome = "success" if info["success"] else "failure"
            return result
    result.outcome = "unfinished"
    return result
