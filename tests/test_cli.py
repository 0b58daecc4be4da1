"""The `textenvs` command, driven as a user would: a real subprocess, stdin and stdout."""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import textenvs
from tests.support.interrupt import interruptible
from textenvs.cli.common import env_option_flags, env_options_from_args
from textenvs.core import registry


def textenvs_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "textenvs.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_help_lists_every_command() -> None:
    done = textenvs_cli("--help")
    assert done.returncode == 0
    for command in ("list", "rules", "play", "run"):
        assert command in done.stdout


def test_a_scripted_eval_loads_neither_the_web_framework_nor_torch(tmp_path: Path) -> None:
    """Every test and user starts this command often: what only `serve` or a model
    needs stays out of its start-up."""
    code = (
        "import sys; from textenvs.cli import main\n"
        f"main(['eval', '--env', 'treasure-hunt', '--agent', 'random', '--seeds', '0-0',"
        f" '--out', {str(tmp_path / 'run')!r}])\n"
        "print('loaded:', *(m for m in ('fastapi', 'uvicorn', 'torch', 'transformers')"
        " if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "loaded:"


def test_list_shows_every_scenario() -> None:
    done = textenvs_cli("list")
    assert done.returncode == 0
    for name in textenvs.names():
        assert name in done.stdout


def test_tables_are_whole_when_piped() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "textenvs.cli", "list"],
        capture_output=True,  # a pipe, not a terminal
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "40"},
    )
    assert done.returncode == 0 and "…" not in done.stdout
    for scenario in registry.SCENARIOS:
        row = next(line for line in done.stdout.splitlines() if f" {scenario.name} " in line)
        assert scenario.env_id in row and scenario.title in row


@pytest.mark.slow
def test_rules_prints_the_prompt_text() -> None:
    done = textenvs_cli("rules", "treasure-hunt")
    assert done.returncode == 0 and "Bomb: the treasure" in done.stdout


def test_unknown_env_is_a_clear_error() -> None:
    done = textenvs_cli("rules", "treasure-hunk")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "textenvs rules: error: unknown environment 'treasure-hunk'; did you mean 'treasure-hunt'?"
    )


def test_run_prints_transcript_and_outcome() -> None:
    done = textenvs_cli("run", "treasure-hunt", "--agent", "scripted", "--seed", "9")
    assert done.returncode == 0, done.stderr
    assert "seed 9, agent scripted" in done.stdout
    assert "> east" in done.stdout
    assert "Outcome: success | return 1" in done.stdout


def test_play_through_stdin() -> None:
    done = textenvs_cli(
        "play", "treasure-hunt", "--seed", "9", stdin="help\nfly\nnorth\nwait\nquit\n"
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Treasure Hunt (inverted symbols)" in out  # the rules, from `help` too
    assert "Cannot read that: no command found in 'fly'." in out
    assert "Position:    x=0, y=1" in out  # `north` was played
    assert "Last command: wait" in out
    assert "Stopped after 2 steps" in out  # `fly` did not cost a step


def test_play_to_the_end_prints_the_outcome() -> None:
    moves = "\n".join(["east"] * 7 + ["north", "west", "west"]) + "\n"
    done = textenvs_cli("play", "treasure-hunt", "--seed", "9", stdin=moves)
    assert done.returncode == 0, done.stderr
    assert "Outcome: success | return 1" in done.stdout


def test_play_ends_cleanly_when_input_ends() -> None:
    done = textenvs_cli("play", "treasure-hunt", "--seed", "1", stdin="")
    assert done.returncode == 0 and "Stopped after 0 steps" in done.stdout


def test_env_options_reach_the_scenario() -> None:
    done = textenvs_cli(
        "run", "magnetic-field", "--agent", "scripted", "--seed", "3", "--env-option", "level=3"
    )
    assert done.returncode == 0, done.stderr
    assert "Magnetic field, 9x9, level 3" in done.stdout


@pytest.mark.slow
def test_megacity_level_reaches_run_and_play() -> None:
    import textenvs

    env = textenvs.make("megacity")
    easy = env.reset(seed=3, options={"level": 0})[0].split("Sites")[0]
    plain = env.reset(seed=3)[0].split("Sites")[0]
    assert easy != plain
    done = textenvs_cli("run", "megacity", "--agent", "random", "--seed", "3",
                        "--env-option", "level=0")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert easy in done.stdout and plain not in done.stdout
    done = textenvs_cli("play", "megacity", "--seed", "3", "--env-option", "level=0", stdin="")
    assert done.returncode == 0 and easy in done.stdout
    done = textenvs_cli("run", "megacity", "--agent", "random", "--env-option", "level=4")
    assert done.returncode == 2 and "level must be one of (0, 1, 2, 3), not 4" in done.stderr


@pytest.mark.slow
def test_bad_env_options_are_one_line_errors() -> None:
    for args, message in [
        (["--env-option", "level"], "--env-option takes KEY=VALUE, got 'level'"),
        (["--env-option", "level=9"], "level must be one of (0, 1, 2, 3), not 9"),
    ]:
        done = textenvs_cli("run", "magnetic-field", "--agent", "random", *args)
        assert done.returncode == 2 and message in done.stderr
        assert "Traceback" not in done.stderr
    done = textenvs_cli("run", "treasure-hunt", "--agent", "random", "--env-option", "x=1")
    assert done.returncode == 2 and "treasure-hunt takes no options" in done.stderr


def test_ctrl_c_in_play_stops_at_once() -> None:
    proc = interruptible(
        ["play", "treasure-hunt", "--seed", "1"],
        stdin=subprocess.PIPE,  # left open: the game waits for a command
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        shown = b""
        while not shown.endswith(b"\n> "):  # the prompt: blocked reading the command
            byte = proc.stdout.read(1)
            assert byte, shown.decode()[-500:]
            shown += byte
        proc.send_signal(signal.SIGINT)
        # stdin stays open until the process has exited (communicate() would close it,
        # and a game that missed the signal would then end on end-of-input, status 0).
        returncode = proc.wait(timeout=60)
        err = proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
    assert returncode == 130 and "interrupted" in err and "Traceback" not in err


@pytest.mark.slow
def test_ctrl_c_in_eval_prints_a_resume_command_that_finishes_the_run(tmp_path: Path) -> None:
    """The hint is typeable as shown: the run's own command with --resume (`--resume
    --out DIR` alone misses the required --env and --agent)."""
    run = tmp_path / "run"
    argv = ["eval", "--env", "treasure-hunt", "--agent", "random", "--seeds", "0-999"]
    proc = interruptible(
        [*argv, "--out", str(run)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        log = run / "episodes.jsonl"
        deadline = time.monotonic() + 120
        while not (log.is_file() and log.stat().st_size) and proc.poll() is None:
            assert time.monotonic() < deadline, "no episode recorded in 120 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130 and "Traceback" not in err, err
    said = "textenvs eval: interrupted; finished episodes are saved; resume with: "
    assert err.splitlines()[-1].startswith(said), err
    command = shlex.split(err.splitlines()[-1].removeprefix(said))
    assert command == ["textenvs", *argv, "--out", str(run), "--resume"]
    done = subprocess.run(
        [sys.executable, "-m", "textenvs.cli", *command[1:]],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert len(log.read_text().splitlines()) == 1000


def test_train_help_shows_the_defaults_the_recipe_relies_on() -> None:
    done = textenvs_cli("train", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())  # argparse wraps the help at any column
    for shown in (
        "GRPO's group; default 4",
        "seeds per step (default 2)",
        "AdamW learning rate (default 1e-05)",
        "rollouts (default 1)",
        "one reply (default 32)",
        "checkpoints (default 10)",
        "oldest deleted (default 1",
        "'textenvs eval' refuses to play a checkpoint",
    ):
        assert shown in text, shown  # fmt: skip


def test_env_option_flags_give_back_the_options_they_were_read_from():
    # a text that looks like JSON ("3", "true") must stay text when read back
    options = {"level": 0, "name": "north", "code": "3", "word": "true", "on": True, "xs": [1, 2]}
    flags = shlex.split(env_option_flags(options))
    assert flags[:2] == ["--env-option", "level=0"] and "name=north" in flags
    assert env_options_from_args(argparse.Namespace(env_options=flags[1::2])) == options
