"""Smoke tests: the service-load and eval-harness benchmarks run end to end on tiny sizes
(their figures are not checked: speed is never a pass/fail here)."""

from __future__ import annotations

import pytest

from benchmarks import eval_harness, service_isolation, service_load


def test_eval_harness_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert eval_harness.main(["--rounds", "1", "--concurrency", "1,2", "--latency", "0.01"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line[:2] in ("1 ", "2 ")]
    assert [row[0] for row in rows] == ["1", "2"]
    # episodes, 30 steps each (every reply is `wait`), a ratio to the ideal
    assert [row[1:3] for row in rows] == [["1", "30"], ["2", "30"]]
    assert all(row[5].endswith("%") for row in rows)


@pytest.mark.slow
def test_service_load_runs(capsys: pytest.CaptureFixture[str]) -> None:
    # A window shorter than connecting takes: each client still measures one step (an
    # empty window used to raise IndexError on a loaded machine).
    argv = ["--clients", "2", "--duration", "0.01", "--warmup", "0.01", "--sessions", "10"]
    assert service_load.main([*argv, "--stacks", "auto,h11:asyncio"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[3:]}
    assert set(rows) == {"auto", "h11:asyncio"}
    for row in rows.values():
        assert float(row[1]) > 0 and row[2].endswith("x")  # steps/s and the ratio to 1500
        assert float(row[3]) <= float(row[4])  # p50 <= p99


@pytest.mark.slow
def test_service_isolation_attacks_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The recording-disk attack and one kill -9 round (the other attacks run in
    tests/service/test_stored_data.py, tests/web/test_record_stored.py and
    tests/service/test_memory_attacks.py)."""
    argv = ["--duration", "0.5", "--attacks", "record-disk", "--kills", "1"]
    assert service_isolation.main(argv) == 0
    out = capsys.readouterr().out
    row = [line.split() for line in out.splitlines() if line.startswith("record-disk ")][-1]
    assert row[5].endswith("x") and row[6].endswith("x")  # p50 and p99 ratios
    assert row[9] == "0"  # no 5xx
    assert float(row[11]) > 0  # megabytes recorded during the attack
    assert "kill -9 x 1: 0 of " in out
