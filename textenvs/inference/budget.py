"""The checkpoint server's memory: how many conversations' keys and values it holds.

Every conversation in flight keeps its keys and values (46 KB a token for SmolLM2-135M
in float32; an evaluation's Treasure Hunt conversation grows to 5,000-6,000 tokens), so
eight at once took more memory than the model itself. The engine keeps the tokens of
all its rows within a budget (`CacheBudget`), as paged inference servers do:

- a request that extends its conversation's row is always served (it grows by a turn);
- a new conversation (or one whose row was emptied) starts only while its prompt fits
  beside the rows of the conversations active in the last `IDLE_S` seconds; otherwise
  it waits for a later round (with no one else active it starts at once, so the
  server always goes on);
- after a round, rows over the budget are emptied: first those idle longest (their
  episodes have most likely ended: an OpenAI-style client never says so), then the
  conversation that started last, so the older ones finish first. A conversation whose
  row was emptied reads its whole prompt again when it comes back, and waits for room
  as a new one does.

The replies are the same whatever the budget: only when each is computed changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel

#: the cache's default size on a CPU (MB): with SmolLM2-135M's float32 weights this
#: keeps an evaluation within 1.5 GB resident; on a GPU, half its free memory
DEFAULT_CPU_MB = 384
#: a row unused this long no longer counts as a conversation in flight (seconds): the
#: clients of an evaluation are back within a round, or have ended their episodes
IDLE_S = 1.0


def bytes_per_token(model: PreTrainedModel) -> int:
    """The keys and values one token keeps in every layer."""
    config = model.config
    heads = config.num_key_value_heads or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return config.num_hidden_layers * 2 * heads * head_dim * model.dtype.itemsize


def default_mb(device: torch.device) -> int:
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return free // 2 // 2**20
    return DEFAULT_CPU_MB


@dataclass
class Row:
    tokens: int = 0  # in the row's cache
    used: float = 0.0  # when it last took part in a round (monotonic seconds)
    started: float = 0.0  # when its conversation started


@dataclass
class CacheBudget:
    """At most `tokens` tokens in all rows together (see the module's docstring)."""

    tokens: int
    idle_s: float = IDLE_S

    def active(self, rows: dict[int, Row], now: float | None = None) -> dict[int, Row]:
        now = time.monotonic() if now is None else now
        return {row: state for row, state in rows.items() if now - state.used < self.idle_s}

    def admits(
        self, prompt_tokens: int, rows: dict[int, Row], taken: set[int], now: float | None = None
    ) -> bool:
        """Whether a new conversation of `prompt_tokens` may start beside the active rows
        (and the rows already taken this round)."""
        active = self.active(rows, now)
        counted = {row: rows[row] for row in taken} | active
        if not counted:
            return True
        return sum(state.tokens for state in counted.values()) + prompt_tokens <= self.tokens

    def to_empty(self, rows: dict[int, Row], now: float | None = None) -> list[int]:
        """Rows to empty so that the rest fit: idle ones, longest idle first, then active
        ones, latest started first; the conversation that started first is kept."""
        total = sum(state.tokens for state in rows.values())
        active = self.active(rows, now)
        idle = sorted((r for r in rows if r not in active), key=lambda r: rows[r].used)
        newest = sorted(active, key=lambda r: rows[r].started, reverse=True)[:-1]
        emptied = []
        for row in idle + newest:
            if total <= self.tokens:
                break
            if rows[row].tokens:
                emptied.append(row)
                total -= rows[row].tokens
        return emptied


def _trim_function() -> ctypes._CFuncPtr | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc: nothing to call
        return None


_MALLOC_TRIM = _trim_function()


def give_back_freed_heap() -> None:
    """Return the C heap's free pages to the system (glibc keeps a round's freed
    activations, 50-100 MB, as its own until it trims)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
