"""The Magnetic Field env: wires state, rules, render and parse into a TextEnv."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.core.env import TextEnv, Transition
from textenvs.core.variants import withheld_option
from textenvs.scenarios.magnetic_field import parse as parsing
from textenvs.scenarios.magnetic_field import render, rules
from textenvs.scenarios.magnetic_field.declaration import SCENARIO
from textenvs.scenarios.magnetic_field.state import (
    LEVELS,
    STEP_BUDGET,
    Action,
    MagneticFieldAction,
    MagneticObservation,
    MagneticState,
)


class MagneticFieldEnv(TextEnv[MagneticState, Action], scenario=SCENARIO):
    """Magnetic Field Pattern Recognition (`textenvs/MagneticField-v6`, `magnetic-field`).

    ## Description
    A static 9x9 "magnetic field" of 0 (empty), 1 (field line) and 2 (intersection) hides
    a four-character hexadecimal message. The field is read as 18 overlapping 2x2 windows
    in raster order; one fixed rule, identical in every episode and never told to the
    agent, gives each window's two bits from its cells; the first 16 bits are the four
    characters, the other 20 a check. The observation shows example pattern -> bits
    entries (hints); the agent must work out the rule, check its reading against the
    check bits, fill four slots with hex digits (moving a cursor) and submit within 40
    steps. Higher levels show fewer hints and more decoration that the rule ignores.

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
    the step index (0-39), and the four slots with the cursor's slot in brackets. Once the
    episode has ended it also shows the true message, the score slot by slot and the true
    bits of all 18 windows. `info["observation"]` holds the same as a `MagneticObservation`.

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
    - The rule (`rules.pattern_value`; written out for all 81 patterns as `rules.TABLE`;
      never told to the agent, whose rules text says only that each bit follows from
      simple properties of the window's cells): a cell is "on a line" when it is 1 or 2.
      The high bit is 1 when exactly one of the window's two top cells is on a line, the
      low bit the same for the two bottom cells.
    - Generation: the message is uniform over 0000-FFFF. In each row of a window pair the
      first cell is drawn at random and the next two follow from the pair's bits, all
      as plain lines (1). Decoration, then hints, are drawn after; so one seed gives the
      same message and the same undecorated windows at every level.
    - Levels (`options={"level": 0..3}` at reset, or `level=` when making the env; default
      0; an integer, anything else is an error) change only the hints and the decoration,
      never the rule or the message (`rules.LEVEL_SPECS`):
      | level | hints | of them from windows | rows lined | lines crossed | rows 2/5/8 |
      |---|---|---|---|---|---|
      | 0 | 20 | every pattern used | 0 | 0 | empty |
      | 1 | 12 | 8 | 25% | 15% | 1 segment |
      | 2 | 8 | 4 | 50% | 30% | 2 segments, 2 intersections |
      | 3 | 6 | 1 | 75% | 45% | 4 segments, 5 intersections |
      "Rows lined": the chance that an empty 3-cell row of a window pair gets a line
      through it; "lines crossed": the chance that a line cell of a read row is drawn as
      an intersection. A lined row keeps both windows' bits; an intersection is still on a
      line. Other hints are drawn from the rest of the table.
    - Decodable from the observation alone: whatever its level, the hints and the check
      copy fix the message for every rule in the family "each bit is a parity of some of
      the properties 'cell i is on a line' / 'cell i is an intersection', possibly
      negated" (the true rule is one). The other hints are redrawn (up to 20 times) until
      they do; if they still do not, the pattern of an undetermined message window is
      added (a few seeds in 10,000, see the docs page).
    - Step index: the index of the next step while playing (0-39); in the final
      observation, the index of the episode's last step (0-39 as well).
    - Slots start empty; an empty slot is never right. Entering a digit does not move the
      cursor. The message is shown only once the episode has ended.
    - Withheld-knowledge variant (`options={"withheld": True}`, opt-in; default play is
      unchanged): for learning across episodes (`--trials K`). The hints are the same
      three in every episode (`rules.WITHHELD_HINTS`: 00/00 -> 00, 10/00 -> 10,
      11/01 -> 01), with no guarantee that they fix the message, and neither the
      observation nor the variant's rules text (`prompts/magnetic-field-withheld.md`) says
      how bits 17-36 are formed. The end of an episode shows the true bits of all 18
      windows as always: the rule must be learned from those. `info["observation"]`
      then carries `withheld: true`. The world (message, field, decoration) is the one
      the same seed and level give in default play.

    ## Version history
    One line a version; the detail is in `docs/scenarios/magnetic-field.md` and, for the readings
    every scenario shares, `docs/changelog.md`.
    - v0: first release (a random table).
    - v1: a rule instead of a random table; levels vary the hints and the decoration.
    - v2: reading 2.
    - v3: reading 3.
    - v4: reading 4 (a lone `A` or a slot in brackets rejects the reply).
    - v5: reading 5 (issue 43).
    - v6: reading 6 (issue 53).
    """

    max_steps = STEP_BUDGET
    action_schema = MagneticFieldAction
    observation_model = MagneticObservation

    levels = LEVELS
    default_level = 0

    def __init__(self, render_mode: str | None = None, level: int = 0) -> None:
        super().__init__(render_mode=render_mode)
        self.level = rules.checked_level(level)

    def initial_state(self, rng: np.random.Generator, options: dict[str, Any]) -> MagneticState:
        unknown = sorted(set(options) - {"level", "withheld"})
        if unknown:
            raise ValueError(
                f"magnetic-field takes only the option 'level' (and 'withheld'), got {unknown}"
            )
        level = rules.checked_level(options.get("level", self.level))
        return rules.initial_state(rng, level, withheld_option(options))

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
