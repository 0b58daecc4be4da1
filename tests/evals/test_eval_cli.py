"""`textenvs eval` as a real subprocess: a full run on every scenario, and SIGKILLs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import textenvs
from textenvs.evals import run_folder, store
from textenvs.evals.metrics import key_of
from textenvs.evals.transcript import TRANSCRIPTS

TEXTENVS = [sys.executable, "-m", "textenvs.cli"]


def eval_cmd(out: Path, *extra: str) -> list[str]:
    return [*TEXTENVS, "eval", "--out", str(out), *extra]


def lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


@pytest.mark.slow
def test_full_scripted_eval_on_all_scenarios(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = subprocess.run(
        eval_cmd(out, "--env", "all", "--agent", "scripted", "--seeds", "0-1"),
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "COLUMNS": "40"},  # piped: the table ignores any width
    )
    assert done.returncode == 0, done.stderr
    names = textenvs.names()
    records = store.read_episodes(out)
    assert sorted(key_of(r) for r in records) == sorted((n, s, 0) for n in names for s in (0, 1))
    assert len(list((out / run_folder.TRAJECTORIES).glob("*.json"))) == len(records)
    summary = json.loads((out / run_folder.SUMMARY).read_text())
    assert summary["complete"] and set(summary["by_env"]) == {*names, "all"}
    for s in summary["by_env"].values():
        for field in ("episodes", "successes", "success_rate", "success_ci95", "mean_return",
                      "return_stderr", "mean_steps", "invalid_action_rate", "tokens"):  # fmt: skip
            assert field in s
    config = json.loads((out / run_folder.CONFIG).read_text())
    assert list(config["envs"]) == names and config["seed_list"] == [0, 1]
    table = done.stdout
    assert "…" not in table and str(out) in table  # stdout is a pipe: nothing cut
    for name, s in summary["by_env"].items():  # every row whole, on one line
        row = next(line for line in table.splitlines() if f" {name} " in line)
        assert f"{s['successes']}/{s['scored_episodes']}" in row

    assert f"textenvs report {out}" in done.stdout  # the last line says what comes next
    rep = subprocess.run(
        [*TEXTENVS, "report", str(out)], capture_output=True, text=True, cwd=tmp_path
    )
    assert rep.returncode == 0, rep.stderr
    report = tmp_path / "reports" / "run"  # the default: its own folder, named after the run
    assert rep.stdout.startswith("report in reports/run/: report.html")
    assert (report / "report.md").is_file() and (report / "report.html").is_file()
    assert len(list((report / TRANSCRIPTS / "run").glob("*.html"))) == len(records)
    assert not (out / TRANSCRIPTS).exists()


def kill_when(proc: subprocess.Popen, path: Path, at_least: int) -> int:
    """SIGKILL `proc` once `path` has `at_least` lines; returns the count seen."""
    deadline = time.monotonic() + 60
    while lines(path) < at_least and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return lines(path)


@pytest.mark.slow
def test_sigkill_at_several_points_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    episodes = out / run_folder.EPISODES
    seeds = "0-599"  # random agent: long enough to be killed mid-run
    args = ("--env", "treasure-hunt", "--agent", "random", "--seeds", seeds, "--concurrency", "4")
    env = {**os.environ, "PYTHONHASHSEED": "0"}

    # 1. Killed before the first write (still importing).
    proc = subprocess.Popen(eval_cmd(out, *args), env=env, stderr=subprocess.DEVNULL)
    time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert lines(episodes) == 0

    # 2. Killed mid-run.
    proc = subprocess.Popen(
        eval_cmd(out, *args, "--resume"), env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    first = kill_when(proc, episodes, 40)
    assert 40 <= first < 600, "the run finished before it could be killed"

    # 3. Killed during a resume, with a torn line left by a (simulated) kill mid-write.
    with open(episodes, "ab") as f:
        f.write(b'{"env":"treasure-hunt","seed":')
    proc = subprocess.Popen(
        eval_cmd(out, *args, "--resume"), env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    second = kill_when(proc, episodes, first + 40)
    assert first + 40 <= second < 600

    # A resume with different settings is refused, naming what differs.
    refused = subprocess.run(
        eval_cmd(out, *args, "--resume", "--max-invalid", "5"), capture_output=True, text=True
    )
    assert refused.returncode == 2 and "max_invalid" in refused.stderr

    # 4. The final resume completes the run.
    final = subprocess.run(eval_cmd(out, *args, "--resume"), capture_output=True, text=True)
    assert final.returncode == 0, final.stderr
    records = store.read_episodes(out)
    counts = Counter(key_of(r) for r in records)
    assert counts == Counter({("treasure-hunt", s, 0): 1 for s in range(600)})
    assert episodes.read_bytes().endswith(b"\n")
    for r in records:
        assert (out / r["trajectory"]).is_file()
    assert json.loads((out / run_folder.SUMMARY).read_text())["by_env"]["all"]["episodes"] == 600


@pytest.mark.slow
def test_eval_env_options_are_recorded_and_checked(tmp_path: Path) -> None:
    out = tmp_path / "run"
    options = ["--agent", "scripted", "--env-option", "level=2", "--seeds", "0-2"]
    done = subprocess.run(
        eval_cmd(out, "--env", "magnetic-field", *options), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((out / "config.json").read_text())["env_options"] == {"level": 2}
    trajectory = next((out / "trajectories").glob("*.json")).read_text()
    assert "level 2" in trajectory
    bad = subprocess.run(
        eval_cmd(tmp_path / "bad", "--env", "all", *options), capture_output=True, text=True
    )
    assert bad.returncode == 2 and "need a single scenario" in bad.stderr
