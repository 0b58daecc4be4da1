"""`benchmarks.checkpoint_eval` runs on the tiny model (its figures are for docs, not
for pass or fail)."""

from __future__ import annotations

import pytest

from benchmarks import checkpoint_eval


@pytest.mark.slow
def test_checkpoint_eval_times_an_evaluation_of_a_model_directory(tiny_dir, capsys):
    assert checkpoint_eval.main(["--model", str(tiny_dir), "--episodes", "2"]) == 0
    header, _, row = capsys.readouterr().out.splitlines()[1:4]
    assert header.split()[:2] == ["episodes", "wall"]
    assert row.split()[0] == "2"
