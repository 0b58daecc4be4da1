"""Levels in runs, summaries, reports and exports: every figure names the level it was
played at, is read against that level's band, and runs at different levels are never
compared without a warning. One mechanism serves Magnetic Field and Megacity."""

from __future__ import annotations

import asyncio
import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import textenvs
from textenvs.agents import make_agent
from textenvs.core.registry import episode_level
from textenvs.evals import run_folder, runner, store
from textenvs.evals.bands import band_for, load_bands, scenario_label
from textenvs.evals.export import ExportFilter, export
from textenvs.evals.metrics import summarize_by_env
from textenvs.evals.plan import EvalPlan, build_config
from textenvs.evals.report import write_report


def run(out: Path, env: str, agent: str, seeds: list[int], options: dict[str, Any]) -> Path:
    plan = EvalPlan(envs=[env], seeds=seeds, env_options=options)
    config = build_config(plan, make_agent(agent), agent_options={}, prices=None, seeds_spec="x")
    asyncio.run(runner.run_eval(plan, out, lambda: make_agent(agent), config))
    return out


def test_episode_level_is_the_option_the_made_level_or_the_default() -> None:
    assert episode_level("megacity") == 2 and episode_level("magnetic-field") == 0
    assert episode_level("megacity", {"level": 0}) == 0
    assert episode_level("megacity", None, constructed=3) == 3
    assert episode_level("megacity", {"level": 1}, constructed=3) == 1
    assert episode_level("treasure-hunt", {"level": 1}) is None  # no levels there
    assert episode_level("no-such-scenario") is None


def test_bands_are_looked_up_by_level() -> None:
    bands = {
        "scenarios": {
            "leveled": {"default_level": 2, "levels": {"0": {"random": 0.5}, "2": {"random": 0.1}}},
            "flat": {"random": 0.3},
        }
    }
    assert band_for(bands, "leveled", 0) == {"random": 0.5}
    assert band_for(bands, "leveled", None) == {"random": 0.1}  # the default level's
    assert band_for(bands, "leveled", 1) is None
    assert band_for(bands, "flat", None) == {"random": 0.3}
    assert band_for(bands, "flat", 1) is None and band_for(bands, "nowhere", None) is None
    shipped = load_bands()
    for env, levels in (("megacity", range(4)), ("magnetic-field", range(4))):
        for level in levels:
            band = band_for(shipped, env, level)
            assert band is not None and band["level"] == level, (env, level)
    assert scenario_label("megacity", 3) == "megacity (level 3)"
    assert scenario_label("treasure-hunt", None) == "treasure-hunt"


def test_runs_record_label_and_score_their_level(tmp_path: Path) -> None:
    easy = run(tmp_path / "easy", "megacity", "random", [0, 1], {"level": 0})
    plain = run(tmp_path / "plain", "megacity", "random", [0, 1], {})
    hard_mf = run(tmp_path / "mf", "magnetic-field", "scripted", [0, 1], {"level": 3})
    config = json.loads((easy / run_folder.CONFIG).read_text())
    assert config["levels"] == {"megacity": 0} and config["env_options"] == {"level": 0}
    assert json.loads((plain / run_folder.CONFIG).read_text())["levels"] == {"megacity": 2}
    assert all(r["level"] == 0 for r in store.read_episodes(easy))
    summary = json.loads((easy / run_folder.SUMMARY).read_text())["by_env"]["megacity"]
    assert summary["level"] == 0
    mf = json.loads((hard_mf / run_folder.SUMMARY).read_text())["by_env"]["magnetic-field"]
    assert mf["level"] == 3 and mf["normalised"] == 1.0  # against level 3's band

    out = tmp_path / "report"
    write_report([easy, plain], out)
    md = (out / "report.md").read_text()
    bands = load_bands()
    version = textenvs.make("megacity").version
    assert f"megacity v{version} level 0" in md and f"megacity v{version} level 2" in md
    for level, label in ((0, "easy"), (2, "plain")):
        band = band_for(bands, "megacity", level)
        assert band is not None
        row = f"| megacity (level {level}) | {label} | success rate |"
        line = next(line for line in md.splitlines() if line.startswith(row))
        assert f"| {band['random']:.3f} | {band['scripted']:.3f} |" in line
    levels = f"v{version} level 0 vs v{version} level 2"
    assert f"plain and easy played megacity differently ({levels})" in md
    # the differences table and the paired headline table both name the two levels
    assert md.count("| megacity (level 0 vs 2) | plain vs easy |") == 2
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert {(r["run"], r["level"]) for r in rows if r["env"] == "megacity"} == {
        ("easy", "0"),
        ("plain", "2"),
    }


def test_an_older_record_without_a_level_takes_its_runs_option() -> None:
    record = {"env": "magnetic-field", "seed": 0, "episode": 0, "outcome": "success",
              "success": True, "return": 1.0, "steps": 8, "invalid_actions": 0}  # fmt: skip
    by_env = summarize_by_env([record], env_options={"level": 3})
    assert by_env["magnetic-field"]["level"] == 3
    mixed = summarize_by_env([record, {**record, "seed": 1, "level": 1}])
    assert mixed["magnetic-field"]["levels"] == [0, 1]
    assert mixed["magnetic-field"]["normalised"] is None  # no one band to read it against


def test_exports_carry_the_level(tmp_path: Path) -> None:
    easy = run(tmp_path / "easy", "megacity", "random", [0, 1], {"level": 1})
    out = tmp_path / "export"
    export([easy], out, "jsonl-chat", ExportFilter(), frozenset({0}))
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert [r["level"] for r in rows] == [1]
    assert "megacity (level 1)" in (out / "README.md").read_text()


@pytest.mark.parametrize("level", [1])
def test_eval_cli_prints_the_level(tmp_path: Path, level: int) -> None:
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "textenvs.cli", "eval", "--out", str(out), "--env", "megacity",
         "--agent", "random", "--seeds", "0-1", "--env-option", f"level={level}"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"megacity (level {level})" in done.stdout
