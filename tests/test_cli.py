"""The `textenvs` command, driven as a user would: a real subprocess, stdin and stdout."""

from __future__ import annotations

import subprocess
import sys

import textenvs


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


def test_list_shows_every_scenario() -> None:
    done = textenvs_cli("list")
    assert done.returncode == 0
    for name in textenvs.names():
        assert name in done.stdout


def test_rules_prints_the_prompt_text() -> None:
    done = textenvs_cli("rules", "treasure-hunt")
    assert done.returncode == 0 and "Bomb: the treasure" in done.stdout


def test_unknown_env_is_a_clear_error() -> None:
    done = textenvs_cli("rules", "treasure-hunk")
    assert done.returncode == 2
    assert "unknown environment 'treasure-hunk'" in done.stderr
    assert "Did you mean 'treasure-hunt'?" in done.stderr


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
