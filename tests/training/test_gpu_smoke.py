"""`benchmarks/gpu_smoke.py` runs every stage on a CPU too (how it is kept working between
the rare runs on a GPU): each stage ends well and says what it did."""

from __future__ import annotations

import json

import pytest
import torch

from benchmarks import gpu_smoke


@pytest.mark.slow
def test_every_stage_runs_on_a_cpu(tmp_path):
    assert gpu_smoke.main(["--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "gpu_smoke.json").read_text())
    stages = {entry["stage"]: entry for entry in report["stages"]}
    assert list(stages) == list(gpu_smoke.STAGES) and report["ok"]
    cuda = torch.cuda.is_available()
    assert report["machine"]["device"] == (torch.cuda.get_device_name(0) if cuda else "cpu")
    assert [row["step"] for row in stages["grpo"]["curve"]] == [1.0, 2.0]
    assert stages["trl-env"]["commands"] and stages["trl-env"]["log"]["tools/call_frequency"] > 0
    assert stages["eval"]["episodes"] == stages["eval-tools"]["episodes"] == 2
    assert stages["reward-weighted"]["reward_weighted"] and stages["reward-weighted"]["step"] == 2
    # the checkpoint trained through act(command) was played in tools mode, its calls read
    assert stages["eval-tools"]["invalid_action_rate"] < 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is visible")
def test_require_gpu_fails_where_there_is_none(tmp_path, capsys):
    assert gpu_smoke.main(["--out", str(tmp_path), "--require-gpu"]) == 1
    assert "no CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "gpu_smoke.json").exists()
