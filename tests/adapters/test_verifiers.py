"""The verifiers environment, run for real (`vf.load_environment` + `evaluate`) against
the loopback OpenAI-protocol server, rewards as `textenvs eval` scores the same replies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("verifiers")

import verifiers as vf
from verifiers.types import ClientConfig

from tests.adapters.conftest import textenvs_eval
from tests.support.openai_server import OpenAIServer


def evaluate(env: vf.Environment, server: OpenAIServer, monkeypatch: pytest.MonkeyPatch,
             rollouts: int) -> list[dict]:  # fmt: skip
    monkeypatch.setenv("LOOPBACK_API_KEY", "test-key")
    client = ClientConfig(
        api_base_url=server.base_url, api_key_var="LOOPBACK_API_KEY", max_retries=0
    )
    out = env.evaluate_sync(client, "test-model", rollouts_per_example=rollouts)
    return out["outputs"]


def test_rewards_match_textenvs_eval_and_groups_share_the_episode(
    model_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = vf.load_environment("textenvs", env="em-anomaly", seeds="0-4")
    assert type(env).__name__ == "TextenvsEnv" and isinstance(env, vf.MultiTurnEnv)
    outputs = evaluate(env, model_server, monkeypatch, rollouts=2)
    assert len(outputs) == 10

    # the same conversation settings as the llm agent, with the same defaults
    expected = textenvs_eval(model_server, tmp_path / "run", "em-anomaly", "0-4")
    by_seed: dict[int, list[dict]] = {}
    for output in outputs:
        by_seed.setdefault(output["info"]["seed"], []).append(output)
    assert sorted(by_seed) == [0, 1, 2, 3, 4]
    for seed, group in by_seed.items():
        record = expected[("em-anomaly", seed)]
        first, second = group
        assert first["completion"] == second["completion"]  # same seed, same episode
        for output in group:
            assert output["reward"] == record["return"]
            assert output["metrics"]["success"] == float(record["success"])
            assert output["metrics"]["steps"] == record["steps"]
            assert output["metrics"]["invalid_actions"] == record["invalid_actions"]
            assert output["prompt"][0]["role"] == "system"
    assert sum(r["invalid_actions"] for r in expected.values()) > 0
    assert sum(r["steps"] for r in expected.values()) > 5


def test_success_reward_options_and_errors() -> None:
    env = vf.load_environment("textenvs", env="magnetic-field", seeds=[1, 2], reward="success",
                              level=2)  # fmt: skip
    rows = env.get_dataset()
    assert len(rows) == 2 and rows[0]["info"]["options"] == '{"level": 2}'
    with pytest.raises(Exception, match="reward must be"):
        vf.load_environment("textenvs", env="treasure-hunt", seeds="0", reward="points")
    with pytest.raises(Exception, match="unknown environment"):
        vf.load_environment("textenvs", env="nowhere", seeds="0")


def test_eval_split_is_set_and_separate(caplog: pytest.LogCaptureFixture) -> None:
    env = vf.load_environment("textenvs", env="treasure-hunt", seeds="0-3", eval_seeds="100-101")
    assert [row["info"]["seed"] for row in env.get_eval_dataset()] == [100, 101]
    assert [row["info"]["seed"] for row in env.get_dataset()] == [0, 1, 2, 3]
    same = vf.load_environment("textenvs", env="treasure-hunt", seeds="0-1")
    assert len(same.get_eval_dataset()) == 2  # defaults to the training seeds
    assert "eval_dataset is not set" not in caplog.text


def test_environment_module_installs_and_loads(tmp_path: Path) -> None:
    """The standalone module installs from the repository (offline: no build isolation,
    no dependencies fetched) and `vf.load_environment` finds it by its name."""
    import subprocess
    import sys

    source = Path(__file__).parents[2] / "environments" / "textenvs_env"
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr[-2000:]
    assert (target / "textenvs_env.py").is_file()
    check = (
        "import verifiers as vf, textenvs_env\n"
        f"assert textenvs_env.__file__.startswith({str(target)!r})\n"
        "env = vf.load_environment('textenvs-env', env='em-anomaly', seeds='0-2')\n"
        "print(type(env).__name__, len(env.get_dataset()), len(env.get_eval_dataset()))"
    )
    run = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=240,
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(target)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["TextenvsEnv", "3", "20"]
