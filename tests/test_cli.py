"""The `textenvs` command, driven as a user would: a real subprocess, stdin and stdout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import textenvs
from textenvs.cli import main
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


def _report_on_empty_config(tmp: Path) -> list[str]:
    (tmp / "empty").mkdir()
    (tmp / "empty" / "config.json").write_text("{}")
    return ["report", str(tmp / "empty")]


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (lambda tmp: ["run", "treasure-hunt", "--agent", "random", "--seed", "-5"],
         "argument --seed: must be 0 or more, not -5"),
        (lambda tmp: ["play", "treasure-hunt", "--seed", "-5"],
         "argument --seed: must be 0 or more, not -5"),
        (lambda tmp: [*EVAL, "--out", str(_file(tmp))], "is a file, not a run directory"),
        (lambda tmp: [*EVAL, "--out", str(_file(tmp) / "run")],
         "cannot write the run directory"),
        (lambda tmp: [*EVAL, "--out", "/proc/textenvs-no-such/run"],
         "cannot write the run directory /proc/textenvs-no-such/run: No such file"),
        (_report_on_empty_config,
         "is not a textenvs run configuration (missing: envs, seed_list, episodes_per_seed, "
         "agent)"),
        (lambda tmp: ["eval", "--env", "treasure-hunt,treasure-hunt", "--agent", "random",
                      "--out", str(tmp / "dup")], "--env names treasure-hunt more than once"),
        (lambda tmp: [*EVAL, "--out", str(tmp / "r"), "--retry-errors"],
         "--retry-errors continues a run: add --resume"),
        (lambda tmp: [*EVAL, "--out", str(tmp / "r"), "--max-error-rate", "2"],
         "argument --max-error-rate: must be between 0 and 1, not 2"),
    ],
)  # fmt: skip
def test_user_mistakes_are_one_line_errors(
    make_args: Callable[[Path], list[str]],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, output = main_in_process(make_args(tmp_path), capsys)
    assert code == 2, output
    assert message in output and "Traceback" not in output
    assert not (tmp_path / "dup").exists() and not (tmp_path / "r").exists()


def main_in_process(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`textenvs ARGS` in this process (no interpreter start-up): (exit code, output)."""
    try:
        code = main(args)
    except SystemExit as exc:  # argparse and one-line errors exit this way
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out + captured.err


EVAL = ["eval", "--env", "treasure-hunt", "--agent", "random", "--seeds", "0"]


def _file(tmp: Path) -> Path:
    path = tmp / "a-file"
    path.write_text("not a run")
    return path


def test_ctrl_c_in_play_stops_at_once() -> None:
    # The child must start with SIGINT at its default disposition, as under a terminal:
    # a signal ignored by whatever started the suite (a background job of a shell script)
    # is inherited through exec, and Python then never installs its KeyboardInterrupt.
    default_sigint = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "textenvs.cli", "play", "treasure-hunt", "--seed", "1"],
            stdin=subprocess.PIPE,  # left open: the game waits for a command
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    finally:
        signal.signal(signal.SIGINT, default_sigint)
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
