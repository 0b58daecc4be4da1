"""Training tests run with the real TRL, transformers and torch (the `train` extra) and a
tiny chat model made on the spot (`benchmarks/support/tiny_model.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl", reason="the train extra is not installed")

from benchmarks.support import tiny_model

#: the tiny model answers `Action: north` or `Action: west`: from (0,0) the first is a
#: new tile and the second a bump, so its Treasure Hunt episodes explore differently
REPLIES = ["north", "west"]


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model.make(tmp_path_factory.mktemp("tiny") / "model", "treasure-hunt", REPLIES)


@pytest.fixture(scope="session")
def tiny(tiny_dir: Path):
    from textenvs.inference import models

    return models.load(str(tiny_dir))


@pytest.fixture(scope="session")
def tool_caller_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model that calls `act(command)` north or west (Qwen 2.5's template)."""
    folder = tmp_path_factory.mktemp("tool-caller") / "model"
    return tiny_model.make_tool_caller(folder, "treasure-hunt", REPLIES)
