"""The Magnetic Field env: wires state, rules, render and parse into a TextEnv."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.core.env import TextEnv, Transition
from textenvs.scenarios.magnetic_field import parse as parsing
from textenvs.scenarios.magnetic_field import render, rules
from textenvs.scenarios.magnetic_field.state import (
    LEVELS,
    STEP_BUDGET,
    Action,
    MagneticFieldAction,
    MagneticObservation,
    MagneticState,
)


class MagneticFieldEnv(TextEnv[MagneticState, Action]):
    """Magnetic Field Pattern Recognition (`textenvs/MagneticField-v0`, `magnetic-field`).

    ## Description
    A static 9x9 "magnetic field" of 0 (empty), 1 (field line) and 2 (intersection) hides
    a four-character hexadecimal message. The field is read as 2x2 windows in raster
    order; a fixed table, identical in every episode and never shown whole, maps each 2x2
    pattern to two bits; the first 16 bits are the four characters. The agent fills four
    slots with hex digits, moving a cursor, and submits within 40 steps.

    ## Actions and command grammar
    | id | command | aliases | effect |
    |---|---|---|---|
    | 0-15 | `enter X` | `X`, `0xX`, `type X`, `input X`, `put X` | X into the slot |
    | 16 | `right` | `cursor right`, `move right`, `MoveRight`, `next` | cursor + 1 |
    | 17 | `left` | `cursor left`, `move left`, `MoveLeft`, `prev`, `back` | cursor - 1 |
    | 18 | `submit` | `finalize`, `submit answer`, `done` | score, end the episode |

    X is one hex digit, 0-9 or A-F (either case); it overwrites the selected slot. The
    cursor wraps: right from slot 4 is slot 1, left from slot 1 is slot 4.

    Case-insensitive; one command may sit inside prose or markdown (`Action: enter A`). A
    bare digit or letter (`A`, `0xA`) is read only as the whole reply or a whole marked
    part; in prose a digit needs its verb and must end the clause (`I will enter A.`).
    Clear errors for the usual wrong shapes: `3FA0` or `enter 3FA0` (one character per
    command), `submit A` (submit takes no character), `enter G` (not a hex digit). Two
    different commands in one reply are rejected. Structured form (function calling):
    `{"action": "A"}`, `{"action": "right"}`, `{"action": "submit"}`.

    ## Observation
    Text: the 9x9 field with rows and columns labelled 0-8 (row 0 on top), a legend, how
    the field is read, the encoding hints (`ab/cd -> bits`: top row a b, bottom row c d),
    the step index (0-39), and the four slots with the cursor's slot in brackets.
    `info["observation"]` holds the same as a `MagneticObservation`; once the episode has
    ended it also holds the scored answer, the true message and the count right.

    ## Rewards
    0.25 per slot holding the right character, paid once, at the end (submit or the
    40-step limit); 0 on every other step. Success means all four right (reward 1.0).

    ## Episode end
    Terminated by `submit`. Truncated when the 40 steps are used; the slots as they stand
    are then scored exactly as a submit would be. Every command, including an unreadable
    reply, spends one step.

    ## Rules as implemented
    - Block layout (36 bits from a 9x9 grid): a 9x9 grid holds at most 16 disjoint 2x2
      blocks, so 18 two-bit regions must overlap. Rows 0-1, 3-4 and 6-7 are three bands;
      in each band the 2x2 windows start at columns 0, 1, 3, 4, 6, 7 (each 3-column group
      is read as two windows sharing its middle column). 3 x 6 = 18 windows in raster
      order (top band first, left to right) give bits 1-36, each window's value high bit
      first. Rows 2, 5 and 8 are never read.
    - Bits 1-16 are the four characters, 4 bits each, most significant first. Bits 17-32
      repeat the message (a check copy) and bits 33-36 are the sum of the four digits mod
      16 (a checksum). Only bits 1-16 are scored.
    - The table (`rules.TABLE`, all 81 patterns of 0/1/2) is a module constant, the same
      in every episode. Each of its rows (a pattern's left column) holds every 2-bit value,
      so any message can be drawn whatever column a window shares with its neighbour.
    - Hints make every episode decodable: the observation shows the table entry of every
      pattern the 18 windows use, padded with other entries to 20, sorted by pattern (so
      neither their number nor their order says where they occur). Reading the windows
      and looking them up decodes the message exactly (the scripted agent does that).
    - The message is uniform over 0000-FFFF; each window's pattern is uniform among the
      patterns with the wanted value (the right window of a pair among those matching the
      shared column).
    - Levels (`options={"level": 0..3}` at reset, or `level=` when making the env; default
      0) add decoration only, in rows 2, 5 and 8: level 1 one stray line segment, level 2
      two segments and two intersections, level 3 four segments and five intersections
      (a segment drawn over a line makes an intersection). Decoration is drawn after the
      message, windows and hints, so one seed gives the same message, windows and hints at
      every level.
    - Step index: the index of the next step, 0-39 while playing; the final observation
      after all 40 steps shows 40 ("all 40 steps used").
    - Slots start empty; an empty slot is never right. Entering a digit does not move the
      cursor. The message is shown only once the episode has ended.

    ## Version history
    - v0: first release.
    """

    name = "magnetic-field"
    title = "Magnetic Field Pattern Recognition"
    version = "0"
    max_steps = STEP_BUDGET
    action_schema = MagneticFieldAction
    observation_model = MagneticObservation

    def __init__(self, render_mode: str | None = None, level: int = 0) -> None:
        super().__init__(render_mode=render_mode)
        if level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
        self.level = level

    def initial_state(self, rng: np.random.Generator, options: dict[str, Any]) -> MagneticState:
        unknown = sorted(set(options) - {"level"})
        if unknown:
            raise ValueError(f"magnetic-field takes only the option 'level', got {unknown}")
        return rules.initial_state(rng, int(options.get("level", self.level)))

    def transition(
        self, state: MagneticState, action: Action, step_index: int
    ) -> Transition[MagneticState]:
        return rules.step(state, action)

    def on_budget_exhausted(self, state: MagneticState) -> Transition[MagneticState]:
        return rules.score(state, "out_of_steps")

    def observe(self, state: MagneticState, steps_used: int) -> dict[str, Any]:
        return render.observe(state, steps_used)

    def render_text(self, observation: dict[str, Any]) -> str:
        return render.render(observation)

    def parse(self, text: str) -> Action:
        return parsing.parse(text)

    def valid_commands(self, state: MagneticState) -> list[str]:
        return list(parsing.VALID)

    def random_command(self, info: dict[str, Any], rng: np.random.Generator) -> str:
        """One of the 19 actions, uniformly."""
        return Action(int(rng.integers(len(Action)))).command
