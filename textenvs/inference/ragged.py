"""Ragged batches for the checkpoint server: each conversation's tokens alone, no padding.

`generation.Sequences` keeps its rows in one padded cache: each call appends a block of
columns to every row, so the model computes the padding of rows whose segments are
shorter and of rows that sit the call out, and every row attends over the cache's whole
width. An evaluation's rows are very unequal (a new episode's 150 tokens beside another's
one-token reply; an episode at its 30th step beside one at its first): measured on
Treasure Hunt, a third to a half of what the model computed was padding, and a decoding
step of one row read the keys and values of all eight.

`RaggedSequences` feeds the new tokens of the rows it reads packed into one sequence, so
the linear layers see real tokens only; each row keeps its keys and values in buffers of
its own (`RowCache`), sized to its own conversation, and attends over them alone
(`ragged_attention`). The sampling loop is `Sequences`' own: only the storage differs,
and the replies are those of each row alone (`tests/training/test_ragged.py`).
"""

from __future__ import annotations

import itertools
import math
import mmap
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import AttentionInterface, PreTrainedModel
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from textenvs.inference.attention import grouped_query_sdpa, use_grouped_query_sdpa
from textenvs.inference.generation import Sequences

NAME = "textenvs_ragged"
#: the forward keyword that carries a call's `Layout` down to the attention
LAYOUT = "textenvs_layout"
#: the least room a row's buffers gain when they grow (tokens)
MIN_ROOM = 256


class RowCache:
    """Each row's keys and values, a buffer a layer, (2, key/value heads, capacity, head
    dim), the first `length` columns written (the length is the caller's to keep).

    A row's buffers grow layer by layer, so growing holds one layer twice, not the whole
    row (a row of 5,000 tokens is over 200 MB in float32: grown whole, the old and the new
    copy were the evaluation's peak). On a CPU each buffer is an anonymous mapping of its
    own, unmapped when it is dropped: buffers of a few megabytes from the C allocator stay
    in its heap once freed, and the evaluation's resident memory grew by half the cache."""

    def __init__(self, model: PreTrainedModel) -> None:
        config = model.config
        heads = config.num_key_value_heads or config.num_attention_heads
        head_dim = (
            getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        )
        self.layers = config.num_hidden_layers
        self.shape = (2, heads, head_dim)
        self.dtype, self.device = model.dtype, model.device
        self.buffers: dict[int, list[torch.Tensor]] = {}

    def reserve(self, row: int, length: int, end: int) -> None:
        """Make room for `end` columns in the row's buffers, their first `length` kept."""
        held = self.buffers.get(row)
        if held is not None and held[0].shape[2] >= end:
            return
        self._move(row, length, end + max(MIN_ROOM, end // 8))

    def write(
        self, layer: int, row: int, at: int, keys: torch.Tensor, values: torch.Tensor
    ) -> None:
        """Write `keys`/`values` (heads, count, dim) at column `at` (room reserved)."""
        end = at + keys.shape[1]
        self.buffers[row][layer][0, :, at:end] = keys
        self.buffers[row][layer][1, :, at:end] = values

    def read(self, layer: int, row: int, end: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The row's first `end` keys and values in `layer` (views, no copy)."""
        held = self.buffers[row][layer][:, :, :end]
        return held[0], held[1]

    def shrink(self, row: int, length: int) -> None:
        """Give back the room of a row cut to `length` tokens, when it is most of it (a
        long episode's row taken by a new one keeps only the shared rules)."""
        held = self.buffers.get(row)
        if held is not None and held[0].shape[2] > 2 * (length + MIN_ROOM):
            self._move(row, length, length + MIN_ROOM)

    def drop(self, row: int) -> None:
        self.buffers.pop(row, None)

    def nbytes(self) -> int:
        return sum(buffer.nbytes for held in self.buffers.values() for buffer in held)

    def _move(self, row: int, length: int, room: int) -> None:
        """Give the row buffers of `room` columns, its first `length` copied, a layer at a
        time (each old buffer is freed as soon as it is copied)."""
        held = self.buffers.setdefault(row, [])
        for layer in range(self.layers):
            moved = self._buffer(room)
            if layer < len(held):
                moved[:, :, :length] = held[layer][:, :, :length]
                held[layer] = moved
            else:
                held.append(moved)

    def _buffer(self, room: int) -> torch.Tensor:
        shape = (self.shape[0], self.shape[1], room, self.shape[2])
        if self.device.type != "cpu":
            return torch.empty(shape, dtype=self.dtype, device=self.device)
        size = math.prod(shape) * self.dtype.itemsize
        # the tensor holds the mapping: it is unmapped when the last view is gone
        return torch.frombuffer(mmap.mmap(-1, size), dtype=self.dtype).view(shape)


@dataclass
class Layout:
    """Where each fed row's tokens sit in a call's packed sequence."""

    cache: RowCache
    rows: list[int]
    #: each row's first place in the packed sequence, and its count of new tokens
    starts: list[int]
    counts: list[int]
    #: each row's tokens in its cache before this call
    cached: list[int]
    #: each row's attention mask by sliding window: the same in every layer, made once
    masks: dict[tuple[int, object], torch.Tensor | None] = field(default_factory=dict)

    def mask(self, place: int, window: object, device: torch.device) -> torch.Tensor | None:
        """The mask of the row at `place` in this call (`_mask`)."""
        if (place, window) not in self.masks:
            count, cached = self.counts[place], self.cached[place]
            self.masks[place, window] = _mask(count, cached, window, device)
        return self.masks[place, window]


def ragged_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    **kwargs: object,
) -> tuple[torch.Tensor, None]:
    """Attention for a packed call (query, key and value of shape (1, heads, tokens,
    dim)): each row's new keys and values go into its buffers, and its queries attend
    over its own tokens. A forward without a `Layout` (a plain batch) is
    `grouped_query_sdpa`'s."""
    layout = kwargs.get(LAYOUT)
    if not isinstance(layout, Layout):
        return grouped_query_sdpa(
            module, query, key, value, attention_mask, dropout, scaling, is_causal, **kwargs
        )
    layer = module.layer_idx  # type: ignore[attr-defined]
    window = kwargs.get("sliding_window")
    out = torch.empty_like(query)
    for place, (row, start, count, cached) in enumerate(
        zip(layout.rows, layout.starts, layout.counts, layout.cached, strict=True)
    ):
        new = slice(start, start + count)
        layout.cache.write(layer, row, cached, key[0, :, new], value[0, :, new])
        keys, values = layout.cache.read(layer, row, cached + count)
        out[:, :, new] = torch.nn.functional.scaled_dot_product_attention(
            query[:, :, new],
            keys.unsqueeze(0),
            values.unsqueeze(0),
            attn_mask=layout.mask(place, window, query.device),
            scale=scaling,
            enable_gqa=keys.shape[0] != query.shape[1],
        )
    return out.transpose(1, 2).contiguous(), None


def _mask(count: int, cached: int, window: object, device: torch.device) -> torch.Tensor | None:
    """Which of the row's `cached + count` tokens each of its `count` new ones sees (None:
    all of them, a single new token with no window to keep to)."""
    if count == 1 and not (isinstance(window, int) and cached + 1 > window):
        return None
    query = torch.arange(cached, cached + count, device=device)[:, None]
    key = torch.arange(cached + count, device=device)[None, :]
    seen = key <= query
    if isinstance(window, int):
        seen &= query - key < window
    return seen


#: model types whose attention passes the forward's keywords (and the layer's sliding
#: window) to the attention function, and has nothing else `ragged_attention` would miss
SUPPORTED = frozenset({"llama", "mistral", "qwen2", "qwen3"})


def sequences_for(
    model: PreTrainedModel, rows: int, *, stop_ids: set[int], pad_id: int, seed: int
) -> Sequences:
    """The server's sequences for `model`: ragged where its attention allows, else one
    padded batch; either way the model attends over the shared key/value heads in place."""
    given = {
        "stop_ids": stop_ids,
        "pad_id": pad_id,
        "generator": torch.Generator().manual_seed(seed),
    }
    if model.config.model_type not in SUPPORTED:
        use_grouped_query_sdpa(model)
        return Sequences(model, rows, **given)
    AttentionInterface.register(NAME, ragged_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    model.set_attn_implementation(NAME)
    return RaggedSequences(model, rows, **given)


class RaggedSequences(Sequences):
    """`Sequences` with each row stored alone and the rows' new tokens packed into one
    sequence a call (the model must attend with `ragged_attention`)."""

    def __init__(self, model: PreTrainedModel, rows: int, **given: Any) -> None:
        super().__init__(model, rows, **given)
        self.row_cache = RowCache(model)
        #: each row's tokens in its cache (its `tokens` but the `pending` ones)
        self.lengths = [0] * rows

    def keep(self, rows: list[int]) -> None:
        for row in set(self.rows) - set(rows):
            self.row_cache.drop(row)
        self.rows = list(rows)

    def _forget(self, row: int, count: int) -> None:
        self.lengths[row] -= count
        self.row_cache.shrink(row, self.lengths[row])

    def holes(self) -> int:
        return 0

    def longest(self) -> int:
        return max((self.lengths[row] for row in self.rows), default=0)

    def width(self) -> int:
        return self.longest()

    def compact(self) -> None:
        """Nothing to drop: no row holds a column it does not read."""

    def _feed(self, feeds: dict[int, list[int]]) -> torch.Tensor:
        """Run the model over the fed rows' new tokens, packed; the logits after each
        fed row's last token, by place (zeros for the rows that sat out)."""
        fed = [row for row in self.rows if feeds.get(row)]
        counts = [len(feeds[row]) for row in fed]
        starts = [0, *itertools.accumulate(counts)][:-1]
        cached = [self.lengths[row] for row in fed]
        ids = [token for row in fed for token in feeds[row]]
        # a row's positions go on from its own cached tokens
        positions = [p for c, n in zip(cached, counts, strict=True) for p in range(c, c + n)]
        last = [start + n - 1 for start, n in zip(starts, counts, strict=True)]
        for row, c, n in zip(fed, cached, counts, strict=True):
            self.row_cache.reserve(row, c, c + n)
        out = self.model(
            input_ids=torch.tensor([ids], device=self.device),
            position_ids=torch.tensor([positions], device=self.device),
            use_cache=False,
            logits_to_keep=torch.tensor(last, device=self.device),
            **{LAYOUT: Layout(self.row_cache, fed, starts, counts, cached)},
        )
        for row, n in zip(fed, counts, strict=True):
            self.lengths[row] += n
        logits = out.logits[0].float()
        by_place = logits.new_zeros((len(self.rows), logits.shape[-1]))
        by_place[[self.rows.index(row) for row in fed]] = logits
        return by_place
