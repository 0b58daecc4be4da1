"""A key/value cache written in place, for `generation.Sequences`.

transformers' `DynamicCache` grows each layer by concatenation: every decoding step
allocates a new copy of the whole layer's keys and values, one column wider, and frees
the old one. For the checkpoint server's batch (8 rows of 1,000-3,000 tokens, 46 KB a
token over SmolLM2's 30 layers) that is a copy of hundreds of megabytes per sampled token,
more memory traffic than the attention itself, and the freed blocks of every size
fragment the allocator (the process's resident memory grew to several times the cache).

Here each layer keeps its keys and values in buffers with room to spare: a step writes
its new columns into the room, and the layer's `keys`/`values` are views of the columns
written so far. A buffer is reallocated only when its room runs out (a quarter more room
each time), so a long evaluation reallocates a few dozen times instead of once per step.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

#: the least room a reallocated buffer gains (columns)
MIN_ROOM = 256


class InPlaceLayer(DynamicLayer):
    """One layer's keys and values, (rows, heads, columns, head_dim), written in place."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self._key_buffer = key_states.new_empty((*key_states.shape[:2], 0, key_states.shape[3]))
        self._value_buffer = value_states.new_empty(
            (*value_states.shape[:2], 0, value_states.shape[3])
        )
        self._show(0)
        self.is_initialized = True

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        start = self.keys.shape[2]
        end = start + key_states.shape[2]
        if end > self._key_buffer.shape[2]:
            self._reallocate(end + max(MIN_ROOM, end // 4))
        self._key_buffer[:, :, start:end] = key_states
        self._value_buffer[:, :, start:end] = value_states
        self._show(end)
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.is_initialized:
            self._key_buffer = self._key_buffer[indices]
            self._value_buffer = self._value_buffer[indices]
            self._show(self.keys.shape[2])

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self.batch_select_indices(beam_idx.to(self.device))

    def select_columns(self, index: torch.Tensor) -> None:
        """Keep, for each row, the columns `index[row]` names, in that order (rows,
        width): the layer becomes `width` columns wide, in the same buffers."""
        width = index.shape[1]
        spread = index[:, None, :, None].expand(-1, self.keys.shape[1], -1, self.keys.shape[3])
        # gather reads the old columns into a new tensor before anything is overwritten
        self._key_buffer[:, :, :width] = self.keys.gather(2, spread)
        self._value_buffer[:, :, :width] = self.values.gather(2, spread)
        self._show(width)

    def _reallocate(self, capacity: int) -> None:
        used = self.keys.shape[2]
        for name in ("_key_buffer", "_value_buffer"):
            old = getattr(self, name)
            new = old.new_empty((*old.shape[:2], capacity, old.shape[3]))
            new[:, :, :used] = old[:, :, :used]
            setattr(self, name, new)
        self._show(used)

    def _show(self, width: int) -> None:
        self.keys = self._key_buffer[:, :, :width]
        self.values = self._value_buffer[:, :, :width]


class InPlaceCache(DynamicCache):
    """A `DynamicCache` whose layers are `InPlaceLayer`s (made as the model first writes
    each layer, as `DynamicCache` makes its own)."""

    def __init__(self) -> None:
        Cache.__init__(self, layer_class_to_replicate=InPlaceLayer)

    def select_columns(self, index: torch.Tensor) -> None:
        """Keep, for each row, the columns `index[row]` names (`InPlaceLayer.select_columns`)."""
        for layer in self.layers:
            layer.select_columns(index)
