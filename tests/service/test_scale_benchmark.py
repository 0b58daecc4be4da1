"""Smoke test: the scale benchmark runs end to end on a tiny size (its figures are not
checked: speed is never a pass/fail here)."""

from __future__ import annotations

import pytest

from benchmarks import service_scale


@pytest.mark.slow
def test_service_scale_runs(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--sessions", "20", "--rates", "40,80", "--clients", "2", "--duration", "0.3"]
    assert service_scale.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("20 sessions opened")
    rows = [line.split() for line in out.splitlines() if line[:3] in ("40 ", "80 ")]
    assert [row[0] for row in rows] == ["40", "80"]
    for row in rows:
        assert float(row[1]) > 0 and float(row[2]) <= float(row[3])  # steps/s; p50 <= p99
