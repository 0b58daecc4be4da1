"""Long work logged to a file says where it is at least once a period (`Heartbeat`); on a
terminal the progress bar says it instead."""

from __future__ import annotations

import io
import time

from rich.console import Console

from textenvs.core.heartbeat import Heartbeat


def _lines(log: io.StringIO, at_least: int, timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while len(log.getvalue().splitlines()) < at_least and time.monotonic() < deadline:
        time.sleep(0.02)
    return log.getvalue().splitlines()


def test_a_log_gets_a_line_each_period_the_work_says_nothing():
    log = io.StringIO()
    beats = iter(range(1, 1000))
    with Heartbeat(Console(file=log, width=200), lambda: f"step {next(beats)} under way", 0.1):
        assert _lines(log, 2)[:2] == ["step 1 under way", "step 2 under way"]
    stopped = len(log.getvalue().splitlines())
    time.sleep(0.3)
    assert len(log.getvalue().splitlines()) == stopped  # it stops with the work


def test_no_beat_comes_while_the_work_prints_lines_of_its_own():
    log = io.StringIO()
    with Heartbeat(Console(file=log, width=200), lambda: "under way", every=2.0) as heartbeat:
        for _ in range(10):  # a line of the work each 0.1 s, a twentieth of the period
            heartbeat.said()
            time.sleep(0.1)
    assert log.getvalue() == ""


def test_a_terminal_gets_no_heartbeat_lines():
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True)
    with Heartbeat(console, lambda: "under way", every=0.05):
        time.sleep(0.2)
    assert screen.getvalue() == ""
