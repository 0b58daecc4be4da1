"""The Magnetic Field env: wires state, rules, render and parse into a TextEnv."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.core.env import TextEnv, Transition
from textenvs.core.variants import withheld_option
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
    """Magnetic Field Pattern Recognition (`textenvs/MagneticField-v5`, `magnetic-field`).

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
    - v2: reading is strict: every word of the command part (its `Action:` line, or the whole
      reply) must belong to the command, a filler word, or a clause that is not read (quotes,
      negations, questions, conditions, reasons); an unknown word, a typo or a scheduling word
      (`then`, `next turn`, `later`, ...) rejects the reply, naming the word (`Action: F;
      submit` was read as `submit`). Prose without an `Action:` line is read only as a short
      order: a sentence that describes (`north at the top`) is not one. `Now:` and `Final
      answer:` mark the command too; `Wait,` before `Action:`, a negation across a dash (`Not
      X — Y`), a one-line JSON action with reasoning keys and `<tool_call>` wrappers are read.
      Each step's info records the command executed (`read_as`). Rules and rendering
      unchanged.
    - v1: a rule instead of a random table; levels change the number of hints and draw
      decoration inside the read windows too; the final observation shows the score per
      slot and the true window bits; strict `level`; step index 0-39 throughout.
    - v0: first release (a random table; every used pattern hinted at every level).
    - v3: a reason clause no longer hides what follows it (`Action: north, because it is
      safe, then east` was read as `north`; now its second command rejects it); a negation
      that cancels or postpones the order is read and rejects the reply (`north, not yet`,
      `north (not now)`, `north, but I can't` ran the order); a line right below an
      `Action:` line that is by itself a command rejects the reply (`Action: north` then
      `east` ran north); a JSON action whose reasoning has a raw line break is read as JSON
      (an `Action:` line quoted in the reasoning was run instead), and an `arguments` object
      beside an action rejects the reply. Found by an adversarial review. Rules, rendering
      and baselines unchanged (re-measured under v3 over seeds 0-999).
    - v4: reading (issue 36). A reason never hides an order: it ends at any joint (a comma,
      a colon, `and`, `but`, `so`, `plus`, `also`, `as well as`, `then`, ...) before a
      command used as an order (`Action: north, because it is safe, and east` ran north; now
      its second command rejects it), while a description stays a reason (`because the east
      and west are walls`); a reason that schedules an order rejects the reply (`north
      because it is safe: then east`). A condition anywhere after an order rejects the reply
      (`north - if possible`, `north. If possible.`, `(if possible)` on the line below ran
      north), and so do a question about another command after it (`Action: north. Or
      east?`) and a line right below the `Action:` line that is not a descriptive remark
      (`Actually, east.`). A lone `A` beside other words rejects the reply (`Action: A;
      right` ran right), and so does a slot named in brackets (`enter 7 (to slot 3)` ran
      enter 7). Read as written now: `move the cursor to the right`, `Now:`/`Answer:` lines
      of reasoning before the `Action:` line, a `### Action` heading, `\\boxed{...}`, a
      leaked chat token (`<|im_end|>`), and descriptive remarks beside the command (`(field
      2)`, `- the west is fully explored`, `. East is a flower.`). Of 759 honest replies in
      the taught format, written independently of the parser, v3 rejected 13.6% and v4 1.2%,
      and neither misread one (the last 155, written after v4's changes and not tuned on:
      5.2% and 1.3%). Rules and rendering unchanged; goldens regenerated (unchanged).
      Baselines re-measured under v4 over seeds 0-999: every figure as v3.
    - v5: reading (issue 43). An order taken back after its `Action:` line is no longer
      executed: v4 read only up to the first blank line, so `Action: north`, a blank line,
      `Wait, I meant east.` ran north (so did the text after a JSON action, a `reasoning`
      written after its action, and the json action mode); now every later paragraph is
      read, and a line that takes the order back or orders for this turn rejects the reply,
      while a remark or a plan for a later turn (`Next I'll move right.`) stays unread.
      Honest replies v4 rejected are read: remarks on the `Action:` line with values and
      places (`B attack (3 > 2)`, `excavate E1 - low stress (72), off both seams`, `north
      (the Flower at (1,0) blocks the east)`, `(28 steps left)`), a place after an order (`A
      north to (0,1); C hold at (0,1)`), the rules' own words for commands (`TurnRight`,
      `declare the node`, `move the cursor one slot to the right`, `step onto the tile to
      the north`, `let one step pass`, ...), and every tool-call wrapper alike (`{"tool_calls":
      [...]}`; a `<tool_call>` naming another tool, `{"name": "move", "arguments":
      {"direction": "north"}}`, is `move north`). Of 187 fresh honest replies written from
      the rules (127 in the taught format), v4 rejected 60 (45) and v5 6 (3); no corpus
      reply is misread. Rules and rendering unchanged; goldens regenerated (unchanged).
      Baselines re-measured under v5 over seeds 0-999: every figure as v4.
    """

    name = "magnetic-field"
    title = "Magnetic Field Pattern Recognition"
    version = "5"
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
