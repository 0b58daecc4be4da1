"""Magnetic Field solver: decodes the message from the observation alone, then types it.

It knows only what the rules and the observation say: which 2x2 windows are read (rows
0-1, 3-4, 6-7; columns starting 0, 1, 3, 4, 6, 7; raster order) and the hints shown. Every
window's pattern must be among the hints; if one were missing the scenario would not be
decodable from its observation, and the policy fails loudly rather than guess.
"""

from __future__ import annotations

from typing import Any

from textenvs.agents.scripted import ScriptedPolicy

BAND_ROWS = (0, 3, 6)
WINDOW_COLS = (0, 1, 3, 4, 6, 7)
SLOTS = 4


def decode(observation: dict[str, Any]) -> str:
    """The four hex characters: bits 1-16 of the windows read through the hints."""
    table = {h["pattern"]: h["bits"] for h in observation["hints"]}
    grid = observation["grid"]
    bits = ""
    for row in BAND_ROWS:
        for col in WINDOW_COLS:
            key = (
                f"{grid[row][col]}{grid[row][col + 1]}/{grid[row + 1][col]}{grid[row + 1][col + 1]}"
            )
            if key not in table:
                raise ValueError(f"pattern {key} at row {row}, column {col} has no hint")
            bits += table[key]
    digits = [int(bits[i : i + 4], 2) for i in range(0, 36, 4)]
    # Bits 17-32 repeat the message and 33-36 are its sum mod 16: a reading check.
    if digits[4:8] != digits[:4] or digits[8] != sum(digits[:4]) % 16:
        raise ValueError(f"the check bits disagree with the message: {digits}")
    return "".join(f"{d:X}" for d in digits[:SLOTS])


class MagneticFieldPolicy(ScriptedPolicy):
    def choose(self, observation: dict[str, Any]) -> str:
        target = decode(observation)
        slots, cursor = observation["slots"], observation["cursor"]
        wrong = [i for i in range(SLOTS) if slots[i] != target[i]]
        if not wrong:
            return "submit"
        if cursor in wrong:
            return f"enter {target[cursor]}"
        # The nearest wrong slot, going round either way.
        right = min((i - cursor) % SLOTS for i in wrong)
        left = min((cursor - i) % SLOTS for i in wrong)
        return "right" if right <= left else "left"
