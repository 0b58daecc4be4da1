"""The verifiers taskset, run for real against the loopback OpenAI-protocol server:
verifiers' own eval runner (what its eval CLI runs) in this process, and the CLI itself on
the standalone module installed from the repository. Rewards are as `textenvs eval`
scores the same replies."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import warnings
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest.importorskip("verifiers", minversion="0.3.1")

import verifiers.v1 as vf

import textenvs
from benchmarks.support.openai_server import OpenAIServer
from benchmarks.support.verifiers_eval import vf_eval
from tests.adapters.conftest import textenvs_eval
from textenvs.adapters.verifiers import TextenvsHarness, TextenvsHarnessConfig
from textenvs.agents.llm.conversation import CONVERSATION_SETTINGS


def taskset_config(**taskset: object) -> vf.EnvConfig:
    """The env config verifiers builds for `eval textenvs --env.taskset.KEY VALUE`."""
    return vf.resolve_env_config({"taskset": {"id": "textenvs", **taskset}})


@pytest.mark.slow
def test_rewards_match_textenvs_eval_and_groups_share_the_episode(
    model_server: OpenAIServer, tmp_path: Path
) -> None:
    config = taskset_config(env="em-anomaly", seeds="0-4")
    env = vf.load_environment(config)
    assert isinstance(env, vf.SingleAgentEnv) and type(env).__name__ == "TextenvsEnv"
    assert isinstance(env._harnesses["agent"], TextenvsHarness)
    episodes = vf_eval(config, model_server, tmp_path / "vf", rollouts=2)
    traces = [trace for episode in episodes for trace in episode.traces]
    assert len(traces) == 10 and all(trace.ok for trace in traces)

    # the same conversation settings as the llm agent, with the same defaults
    expected = textenvs_eval(model_server, tmp_path / "run", "em-anomaly", "0-4")
    by_seed: dict[int, list[vf.Trace]] = {}
    for trace in traces:
        by_seed.setdefault(trace.task.data.seed, []).append(trace)
    assert sorted(by_seed) == [0, 1, 2, 3, 4]
    for seed, (first, second) in by_seed.items():
        record = expected[("em-anomaly", seed)]
        assert first.messages == second.messages  # same seed, same episode
        for trace in (first, second):
            assert trace.reward == record["return"]
            assert trace.metrics == {
                "success": float(record["success"]),
                "return": record["return"],
                "steps": record["steps"],
                "invalid_actions": record["invalid_actions"],
            }
            episode = trace.info["textenvs"]
            assert sum(episode["step_rewards"]) == pytest.approx(record["return"])
            assert episode["outcome"] == record["outcome"]
            assert trace.messages[0].role == "system"
    assert sum(r["invalid_actions"] for r in expected.values()) > 0
    assert sum(r["steps"] for r in expected.values()) > 5
    # the eval's output: one trace a line, with its rewards
    (run_dir,) = (tmp_path / "vf").iterdir()
    lines = (run_dir / "traces.jsonl").read_text().splitlines()
    assert len(lines) == 10 and "textenvs" in json.loads(lines[0])["traces"][0]["info"]


def test_megacity_level_reaches_the_tasks() -> None:
    env = textenvs.load_environment(env="megacity", seeds=[1, 2], level=0)
    tasks = list(env.taskset)
    assert [task.data.options for task in tasks] == [{"level": 0}, {"level": 0}]
    first = textenvs.make("megacity").reset(seed=1, options={"level": 0})[0]
    assert tasks[0].data.prompt == first
    with pytest.raises(ValueError, match=r"level must be one of \(0, 1, 2, 3\)"):
        textenvs.load_environment(env="megacity", seeds="0", level=7)


def test_success_reward_options_settings_and_errors() -> None:
    env = textenvs.load_environment(env="magnetic-field", seeds=[1, 2], reward="success",
                                    level=2, history=3)  # fmt: skip
    tasks = list(env.taskset)
    assert [task.data.options for task in tasks] == [{"level": 2}, {"level": 2}]
    assert tasks[0].config.reward == "success"
    assert env.config.agent.harness.settings().history_policy == "window"  # as `--history 3`
    # every conversation setting is a harness option, typed as the llm agent types it
    assert set(CONVERSATION_SETTINGS) <= set(TextenvsHarnessConfig.model_fields)
    with pytest.raises(ValueError, match="reward"):
        textenvs.load_environment(env="treasure-hunt", seeds="0", reward="points")
    with pytest.raises(ValueError, match="history_policy"):
        textenvs.load_environment(env="treasure-hunt", seeds="0", history_policy="sliding")
    with pytest.raises(ValueError, match="level"):
        textenvs.load_environment(env="magnetic-field", seeds="0", level=99)
    with pytest.raises(Exception, match="unknown environment"):
        taskset_config(env="nowhere")
    # a trace that another harness left has no episode to score, and scoring says so
    trace = vf.Trace(task=vf.TraceTask(type="TextenvsTask", data=tasks[0].data),
                     agent=vf.AgentInfo(config=vf.AgentConfig()))  # fmt: skip
    with pytest.raises(vf.TaskError, match="the textenvs harness plays it"):
        asyncio.run(tasks[0].score(trace))


def test_eval_split_runs_without_warnings(
    model_server: OpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = taskset_config(env="treasure-hunt", seeds="0-3", eval_seeds="100-101",
                                split="eval")  # fmt: skip
        # in this process, where its warnings and log records can be seen
        episodes = vf_eval(config, model_server, tmp_path, served=False)
    assert sorted(e.traces[0].task.data.seed for e in episodes) == [100, 101]
    train = vf.load_environment(taskset_config(env="treasure-hunt", seeds="0-3"))
    assert [task.data.seed for task in train.taskset] == [0, 1, 2, 3]
    assert not caplog.records, [record.getMessage() for record in caplog.records]
    assert not [str(w.message) for w in caught if "verifiers" in w.filename + str(w.message)]


def v1_eval_command() -> Path:
    """verifiers' eval command for v1 environments: `eval` in 0.3 (whose `vf-eval` runs
    legacy environments), `vf-eval` from 0.4."""
    (name,) = [script.name for script in entry_points(group="console_scripts")
               if script.value == "verifiers.v1.cli.eval.main:main"]  # fmt: skip
    return Path(sys.executable).with_name(name)


@pytest.mark.slow
def test_environment_module_installs_and_runs_with_the_eval_cli(
    model_server: OpenAIServer, tmp_path: Path
) -> None:
    """The standalone module installs from the repository (offline: no build isolation,
    no dependencies fetched), and verifiers' eval CLI finds it by its id and runs it."""
    source = Path(__file__).parents[2] / "environments" / "textenvs_env"
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr[-2000:]
    assert (target / "textenvs_env.py").is_file()
    run = subprocess.run(
        [str(v1_eval_command()), "textenvs-env", "--env.taskset.env", "em-anomaly",
         "--env.taskset.split", "eval", "--env.taskset.eval-seeds", "0-1",
         "--env.agent.harness.history", "3", "-m", "test-model",
         "--client.base-url", model_server.base_url, "--no-push", "--no-rich",
         "-o", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(target)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "WARNING" not in run.stderr, run.stderr[-2000:]
    (traces_file,) = (tmp_path / "out").glob("*/traces.jsonl")
    traces = [json.loads(line)["traces"][0] for line in traces_file.read_text().splitlines()]
    assert sorted(t["task"]["data"]["seed"] for t in traces) == [0, 1]
    assert all(t["task"]["type"] == "TextenvsTask" and "textenvs" in t["info"] for t in traces)
    assert traces[0]["agent"]["config"]["harness"]["history"] == 3
    # the window of 3 past turns: at most 4 observations a request, over longer episodes
    observations = [
        sum(m["role"] == "user" and "Reply again" not in m["content"] for m in r.messages)
        for r in model_server.requests
    ]
    assert max(observations) == 4 and len(observations) > 2 * 4
