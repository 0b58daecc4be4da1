"""The four compass directions as grid steps (dx, dy), one convention for every scenario
and scripted agent: x grows to the east, y grows to the north."""

from __future__ import annotations

#: each direction's step, in the order north, south, east, west (the order scenarios list
#: their moves in)
COMPASS: dict[str, tuple[int, int]] = {
    "north": (0, 1),
    "south": (0, -1),
    "east": (1, 0),
    "west": (-1, 0),
}
