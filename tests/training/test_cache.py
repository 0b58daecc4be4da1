"""`InPlaceCache`: the same keys and values as transformers' `DynamicCache`, written into
buffers that are reallocated only when their room runs out."""

from __future__ import annotations

import torch
from transformers import DynamicCache

from textenvs.inference.cache import MIN_ROOM, InPlaceCache


def columns(generator: torch.Generator, width: int, rows: int = 3) -> torch.Tensor:
    return torch.randn(rows, 2, width, 4, generator=generator)


def test_updates_past_the_room_give_what_concatenation_gives():
    generator = torch.Generator().manual_seed(0)
    in_place, concatenated = InPlaceCache(), DynamicCache()
    buffers = set()
    for width in [5, 1, 1, MIN_ROOM, 1, 3 * MIN_ROOM, 1]:
        keys, values = columns(generator, width), columns(generator, width)
        for layer in range(2):
            got = in_place.update(keys, values, layer)
            expected = concatenated.update(keys, values, layer)
            assert all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))
        buffers.add(in_place.layers[0].keys.untyped_storage().data_ptr())
    assert in_place.get_seq_length() == concatenated.get_seq_length()
    assert len(buffers) == 3  # reallocated for the two updates wider than the room left


def test_selected_columns_and_rows_are_those_of_the_concatenated_cache():
    generator = torch.Generator().manual_seed(1)
    in_place, concatenated = InPlaceCache(), DynamicCache()
    for width in [7, 1, 2]:
        keys, values = columns(generator, width), columns(generator, width)
        in_place.update(keys, values, 0)
        concatenated.update(keys, values, 0)
    index = torch.tensor([[0, 2, 9], [1, 5, 8], [3, 4, 6]])
    in_place.select_columns(index)
    spread = index[:, None, :, None].expand(-1, 2, -1, 4)
    got, kept = in_place.layers[0], concatenated.layers[0]
    assert torch.equal(got.keys, kept.keys.gather(2, spread))
    assert torch.equal(got.values, kept.values.gather(2, spread))
    rows = torch.tensor([2, 0])
    in_place.batch_select_indices(rows)
    more = columns(generator, 1, rows=2)
    keys, _ = in_place.update(more, more, 0)
    assert torch.equal(keys[:, :, :3], concatenated.layers[0].keys.gather(2, spread)[rows])
    assert torch.equal(keys[:, :, 3:], more)
