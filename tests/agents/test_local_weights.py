"""The embedded model's weights are served widened to F16, made once into the user cache;
where the copy cannot be made, the model does not start (the packaged file crashes
llama.cpp on some CPUs) and the error says what to do."""

from __future__ import annotations

import importlib.util
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


def test_a_file_that_cannot_be_widened_is_refused(cache: Path, tmp_path: Path) -> None:
    broken = tmp_path / "model.Q4_1.gguf"
    broken.write_bytes(b"not a model")
    with pytest.raises(local_weights.NoServingWeights, match="widening exited with"):
        local_weights.serving_weights(broken)
    assert not list(cache.glob("*"))  # no partial file left behind


def test_an_unwritable_cache_stops_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The packaged Q4_1 file crashes llama.cpp's server on some CPUs: where the F16 copy
    cannot be written, the embedded model does not start on it but says what to do."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # a file: no folder can go under it
    model = tmp_path / "model.Q4_1.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(local_weights.NoServingWeights) as caught:
        local_weights.serving_weights(model)
    target = blocked / "textenvs" / "model.F16.gguf"
    assert str(caught.value) == (
        f"cannot write the embedded model's F16 copy to {target} ([Errno 20] Not a "
        f"directory: '{blocked / 'textenvs'}'); llama.cpp crashes serving the packaged "
        f"model.Q4_1.gguf itself, so make {target.parent} writable with 300 MB free, or set "
        "XDG_CACHE_HOME to a folder that is"
    )
    assert blocked.read_text() == ""  # nothing written
