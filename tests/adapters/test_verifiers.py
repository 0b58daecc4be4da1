"""The verifiers environment, run for real (`vf.load_environment` + `evaluate`) against
the loopback OpenAI-protocol server, rewards as `textenvs eval` scores the same replies."""

from __future__ import annotations

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
    env = vf.load_environment("textenvs", env="em-anomaly", seeds="0-4", reasks=1)
    assert type(env).__name__ == "TextenvsEnv" and isinstance(env, vf.MultiTurnEnv)
    outputs = evaluate(env, model_server, monkeypatch, rollouts=2)
    assert len(outputs) == 10

    # verifiers keeps the whole conversation in the prompt; the llm agent keeps 8 turns.
    # With a window that holds every turn, both send the same messages.
    expected = textenvs_eval(model_server, tmp_path / "run", "em-anomaly", "0-4", "--history", "40")
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
