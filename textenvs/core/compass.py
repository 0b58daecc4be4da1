"""The four compass directions as grid steps (dx, dy), one convention for every scenario
and scripted agent: x grows to the east, y grows to the north."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: each direction's step, in the order north, south, east, west (the order scenarios list
#: their moves in); read-only, as every scenario and scripted agent shares it
COMPASS: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        "north": (0, 1),
        "south": (0, -1),
        "east": (1, 0),
        "west": (-1, 0),
    }
)
