"""Magnetic Field observation -> text (the only place that writes what the agent reads)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from textenvs.core.render import grid, legend
from textenvs.scenarios.magnetic_field import rules
from textenvs.scenarios.magnetic_field.state import (
    CREDIT_PER_CHAR,
    HEX,
    SIZE,
    SLOTS,
    STEP_BUDGET,
    MagneticState,
    Pattern,
)

LEGEND = legend([("0", "empty space"), ("1", "field line segment"), ("2", "intersection")])
READING = (
    "How to read it: rows 0-1, 3-4 and 6-7 are read as 2x2 windows at columns 0-1, 1-2,\n"
    "3-4, 4-5, 6-7 and 7-8 (18 windows, band by band from the top, left to right in each\n"
    "band). Rows 2, 5 and 8 are never read. One fixed rule gives each window's 2 bits from\n"
    "its cells; the hints are examples of it. Bits 1-16 are the four hex characters, 4 bits\n"
    "each, most significant bit first. Bits 17-32 repeat them and bits 33-36 are their sum\n"
    "mod 16 (a check)."
)
# The withheld-knowledge variant does not say how the check bits are formed.
WITHHELD_READING = READING.split(" Bits 17-32")[0] + (
    " Bits 17-36 are check bits\n(how they are formed is not told)."
)
HINTS_PER_LINE = 5


def pattern_text(pattern: Pattern) -> str:
    """'ab/cd': top row a b, bottom row c d."""
    tl, tr, bl, br = pattern
    return f"{tl}{tr}/{bl}{br}"


def observe(state: MagneticState, steps_used: int) -> dict[str, Any]:
    """The agent's view as a `MagneticObservation`-shaped dict (built directly: this runs
    every step, and the pydantic model documents and validates it in the tests)."""
    ended = state.ended is not None
    return {
        "grid": [list(row) for row in state.grid],
        # While playing, the next step; once over, the last one taken (0-39 either way).
        "step_index": steps_used - 1 if ended else steps_used,
        "steps_left": STEP_BUDGET - steps_used,
        "cursor": state.cursor,
        "slots": list(state.slots),
        "hints": [{"pattern": p, "bits": b} for p, b in _hint_texts(state.hints)],
        "level": state.level,
        "status": state.ended or "playing",
        "answer": state.answer if ended else None,
        "message": "".join(HEX[d] for d in state.message) if ended else None,
        "correct": rules.correct_count(state) if ended else None,
        "slot_right": list(rules.slot_right(state)) if ended else None,
        "window_bits": [format(v, "02b") for v in rules.window_values(state.message)]
        if ended
        else None,
        **({"withheld": True} if state.withheld else {}),
    }


# The grid and the hints never change within an episode: their text is memoised on the
# (hashable) values, a few episodes' worth.
@lru_cache(maxsize=64)
def _hint_texts(hints: tuple[tuple[Pattern, int], ...]) -> tuple[tuple[str, str], ...]:
    return tuple((pattern_text(p), format(v, "02b")) for p, v in hints)


@lru_cache(maxsize=64)
def _field_text(rows: tuple[tuple[int, ...], ...]) -> str:
    return grid(
        [[str(v) for v in row] for row in rows],
        col_labels=[str(c) for c in range(SIZE)],
        row_labels=[str(r) for r in range(SIZE)],
        corner="row",
    )


@lru_cache(maxsize=64)
def _hint_lines(hints: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    entries = [f"{pattern} -> {bits}" for pattern, bits in hints]
    return tuple(
        "  " + "   ".join(entries[i : i + HINTS_PER_LINE])
        for i in range(0, len(entries), HINTS_PER_LINE)
    )


def render(obs: dict[str, Any]) -> str:
    field = _field_text(tuple(map(tuple, obs["grid"])))
    hint_lines = _hint_lines(tuple((h["pattern"], h["bits"]) for h in obs["hints"]))
    cursor = obs["cursor"]
    slots = " ".join(
        f"[{s or '_'}]" if i == cursor else f" {s or '_'} " for i, s in enumerate(obs["slots"])
    )
    step_index, steps_left = obs["step_index"], obs["steps_left"]
    if obs["status"] == "playing":
        step = f"Step index: {step_index} (steps 0-{STEP_BUDGET - 1}; {steps_left} left)"
    else:
        step = f"Step index: {step_index} (the last step; {steps_left} left)"
    parts = [
        f"Magnetic field, 9x9, level {obs['level']} (columns 0-8 left to right, "
        "rows 0-8 top to bottom):",
        field,
        LEGEND,
        "",
        WITHHELD_READING if obs.get("withheld") else READING,
        "",
        "Encoding hints (pattern ab/cd = top row a b, bottom row c d -> its 2 bits):",
        *hint_lines,
        "",
        step,
        f"Slots: {slots}   (cursor on slot {cursor + 1} of {SLOTS})",
    ]
    if obs["status"] != "playing":
        parts += _ending(obs)
    return "\n".join(parts)


def _ending(obs: dict[str, Any]) -> list[str]:
    """The score, slot by slot, and the true bits of every window (to learn the rule from)."""
    how = "you submitted" if obs["status"] == "submitted" else "the steps ran out; scored"
    marks = zip(obs["answer"], obs["message"], obs["slot_right"], strict=True)
    slots = " | ".join(
        f"slot {i + 1}: {answer} " + ("right" if ok else f"wrong, was {true}")
        for i, (answer, true, ok) in enumerate(marks)
    )
    bands = [" ".join(obs["window_bits"][k : k + 6]) for k in range(0, 18, 6)]
    return [
        f"EPISODE OVER: {how} {obs['answer']}. The message was {obs['message']}: "
        f"{obs['correct']} of {SLOTS} characters right "
        f"(reward {CREDIT_PER_CHAR * (obs['correct'] or 0):g}).",
        f"Per slot: {slots}.",
        "The true bits of windows 1-18 (one band per group): " + " / ".join(bands),
    ]
