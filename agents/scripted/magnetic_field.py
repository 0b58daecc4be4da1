"""Magnetic Field solver: works the encoding rule out from the observation, then types.

It knows only what the rules text says: which 2x2 windows are read (rows 0-1, 3-4, 6-7;
columns starting 0, 1, 3, 4, 6, 7; raster order), that one fixed rule gives each window's
two bits from simple properties of its cells, that bits 17-32 repeat bits 1-16 and bits
33-36 are the sum of the four characters mod 16. It does not know the rule.

Its hypotheses: each bit is the parity (XOR) of some of the eight cell properties "cell i
holds something" and "cell i is an intersection", possibly negated: 512 candidate
functions per bit. It keeps those that agree with every hint and give each message
window the same bits as its check copy, pairs them, keeps the pairs whose reading passes
the checksum, and decodes only if every surviving pair reads the same message (otherwise
it fails loudly rather than guess).
"""

from __future__ import annotations

from itertools import product
from typing import Any

import numpy as np

from textenvs.agents.scripted import ScriptedPolicy

BAND_ROWS = (0, 3, 6)
WINDOW_COLS = (0, 1, 3, 4, 6, 7)
SLOTS = 4
MESSAGE_WINDOWS = 8  # bits 1-16; windows 9-16 repeat them, 17-18 are the checksum
# PARITY[m, p]: candidate function m (a mask over the 8 cell properties and a constant 1)
# applied to a window with property bits p.
_MASKS = np.arange(1 << 9)
PARITY = (np.bitwise_count(_MASKS[:, None] & _MASKS[None, :]) & 1).astype(np.uint8)


def window_keys(grid: list[list[int]]) -> list[str]:
    """The 18 read windows as 'ab/cd' (top row a b, bottom row c d), in reading order."""
    return [
        f"{grid[r][c]}{grid[r][c + 1]}/{grid[r + 1][c]}{grid[r + 1][c + 1]}"
        for r in BAND_ROWS
        for c in WINDOW_COLS
    ]


def properties(key: str) -> int:
    """Bit i: cell i (tl, tr, bl, br) is not empty; bit 4+i: it is a 2; bit 8: always 1."""
    cells = [int(ch) for ch in key if ch != "/"]
    mask = 1 << 8
    for i, value in enumerate(cells):
        mask |= int(value != 0) << i | int(value == 2) << (4 + i)
    return mask


def readings(
    bit: int, hints: dict[str, str], props: list[int], check: bool = True
) -> set[tuple[int, ...]]:
    """Every distinct reading of one bit (high 0, low 1) over the 18 windows, by the
    candidate functions that agree with the hints and (`check`) with the check copy."""
    keep = np.ones(len(PARITY), dtype=bool)
    for key, bits in hints.items():
        keep &= PARITY[:, properties(key)] == int(bits[bit])
    values = PARITY[keep][:, props]
    if check:
        copies = values[:, :MESSAGE_WINDOWS] == values[:, MESSAGE_WINDOWS : 2 * MESSAGE_WINDOWS]
        values = values[copies.all(axis=1)]
    return {tuple(int(v) for v in row) for row in values}


def messages(observation: dict[str, Any], hints: dict[str, str], check: bool = True) -> set[str]:
    """Every message some candidate rule agreeing with `hints` (pattern -> bits) and
    (`check`) with the check copy and checksum reads from the observation's field."""
    props = [properties(key) for key in window_keys(observation["grid"])]
    high_low = product(readings(0, hints, props, check), readings(1, hints, props, check))
    found = set()
    for high, low in high_low:
        values = [2 * h + lo for h, lo in zip(high, low, strict=True)]
        digits = [4 * values[2 * i] + values[2 * i + 1] for i in range(9)]
        if not check or digits[8] == sum(digits[:SLOTS]) % 16:
            found.add("".join(f"{d:X}" for d in digits[:SLOTS]))
    return found


def decode(observation: dict[str, Any]) -> str:
    """The four hex characters the observation fixes, or ValueError if it fixes none."""
    found = messages(observation, {h["pattern"]: h["bits"] for h in observation["hints"]})
    if len(found) != 1:
        raise ValueError(f"the observation allows {len(found)} messages, not one")
    return found.pop()


def next_command(observation: dict[str, Any], target: str) -> str:
    """Type `target` into the slots (nearest wrong slot first), then submit."""
    slots, cursor = observation["slots"], observation["cursor"]
    wrong = [i for i in range(SLOTS) if slots[i] != target[i]]
    if not wrong:
        return "submit"
    if cursor in wrong:
        return f"enter {target[cursor]}"
    right = min((i - cursor) % SLOTS for i in wrong)
    left = min((cursor - i) % SLOTS for i in wrong)
    return "right" if right <= left else "left"


class MagneticFieldPolicy(ScriptedPolicy):
    target: str | None = None

    def choose(self, observation: dict[str, Any]) -> str:
        if self.target is None:  # the field and the hints never change in an episode
            self.target = decode(observation)
        return next_command(observation, self.target)
