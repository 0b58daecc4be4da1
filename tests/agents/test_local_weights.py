"""The embedded model's weights are served widened to F16, made once into the user cache,
and the packaged file is served when the copy cannot be made."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import pytest

from textenvs.agents.llm import local_weights


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "textenvs"


def packaged_gguf() -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs the [local] extra")
    try:
        return local_weights.packaged_gguf()
    except local_weights.PackagedModelMissing:
        pytest.skip("needs the [local] extra")


def test_the_packaged_model_is_widened_once(cache: Path) -> None:
    packaged = packaged_gguf()
    served = local_weights.serving_weights(packaged)
    assert served == cache / "SmolLM2-135M-Instruct.F16.gguf"
    assert served.read_bytes()[:4] == b"GGUF"
    assert served.stat().st_size > 2.5 * packaged.stat().st_size  # 16 bits a weight, not ~4.5
    made = served.stat().st_mtime_ns
    assert local_weights.serving_weights(packaged) == served
    assert served.stat().st_mtime_ns == made  # reused, not made again
    assert not list(cache.glob("*.partial"))


def test_a_file_that_cannot_be_widened_is_served_as_packaged(
    cache: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "model.Q4_1.gguf"
    broken.write_bytes(b"not a model")
    with caplog.at_level(logging.WARNING):
        assert local_weights.serving_weights(broken) == broken
    assert "as packaged" in caplog.text
    assert not list(cache.glob("*"))  # no partial file left behind


def test_an_unwritable_cache_serves_the_packaged_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # a file: no folder can go under it
    model = tmp_path / "model.Q4_1.gguf"
    model.write_bytes(b"GGUF")
    assert local_weights.serving_weights(model) == model
