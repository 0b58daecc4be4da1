"""`--backend ray` without the extra installed: one clear line, exit 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from textenvs.cli import main


def test_backend_ray_without_ray(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    monkeypatch.delitem(sys.modules, "textenvs.evals.ray_backend", raising=False)
    argv = ["eval", "--env", "treasure-hunt", "--agent", "random", "--seeds", "0",
            "--out", str(tmp_path / "run"), "--backend", "ray"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--backend ray needs Ray: pip install 'textenvs[ray]'" in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()


def test_ray_flags_need_the_ray_backend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--env", "treasure-hunt", "--agent", "random", "--seeds", "0",
            "--out", str(tmp_path / "run"), "--ray-address", "127.0.0.1:1"]  # fmt: skip
    assert main(argv) == 2
    assert "--ray-address and --ray-actors go with --backend ray" in capsys.readouterr().err
