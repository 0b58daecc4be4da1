"""The Inspect tasks, run for real (the `inspect` CLI and `inspect_ai.eval`) against the
loopback OpenAI-protocol server, give the same outcomes as `textenvs eval`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import list_eval_logs, read_eval_log

import textenvs
from tests.adapters.conftest import textenvs_eval
from tests.support.openai_server import OpenAIServer, http_error
from textenvs.adapters.inspect import scenario_task
from textenvs.adapters.inspect.solver import fenced
from textenvs.evals.metrics import summarize_by_env

MODEL = "openai-api/loopback/test-model"  # Inspect's provider for OpenAI-compatible servers


def loopback_env(server: OpenAIServer) -> dict[str, str]:
    return {"LOOPBACK_BASE_URL": server.base_url, "LOOPBACK_API_KEY": "test-key"}


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
