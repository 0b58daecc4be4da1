"""The Treasure Hunt env: wires state, rules, render and parse into a TextEnv."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.core.env import Event, TextEnv, Transition
from textenvs.scenarios.treasure_hunt import parse as parsing
from textenvs.scenarios.treasure_hunt import render, rules
from textenvs.scenarios.treasure_hunt.state import (
    STEP_BUDGET,
    Action,
    TreasureHuntAction,
    TreasureObservation,
    TreasureState,
)


class TreasureHuntEnv(TextEnv[TreasureState, Action]):
    """Inverted-Symbol Treasure Hunt Grid (`textenvs/TreasureHunt-v5`, `treasure-hunt`).

    ## Description
    An 8x8 grid hides one Bomb, ten Flowers and 53 Empty tiles. The symbols are inverted:
    the Bomb is the treasure, a Flower is a deadly trap. The agent starts at (0,0), the
    bottom-left corner, and must step onto the Bomb within 30 steps without stepping on a
    Flower. Tiles are hidden until the agent steps on them.

    ## Actions and command grammar
    | command | aliases | effect |
    |---|---|---|
    | `north` | `n`, `move north`, `MoveNorth`, `go north`, `up` | y + 1 |
    | `south` | `s`, `move south`, `MoveSouth`, `go south`, `down` | y - 1 |
    | `east` | `e`, `move east`, `MoveEast`, `go east`, `right` | x + 1 |
    | `west` | `w`, `move west`, `MoveWest`, `go west`, `left` | x - 1 |
    | `reveal` | `r`, `Reveal tile` | reveal the agent's own tile |
    | `wait` | `stay` | nothing |

    Commands are case-insensitive and may sit inside prose or markdown
    (`Action: north`). A reply runs only if it has exactly one reading (see "The reading
    invariant" in docs/architecture.md): a final `Action:` line is authoritative; quoted
    or negated text is not read; `up`/`down`/`left`/`right` count in prose only after a
    verb (`go left`, not `to my left`); two different commands, or one written as several
    steps (`north, north`, `north twice`), are rejected.
    Structured form (function calling): `{"action": "north"}`.

    ## Observation
    Text: the position `x=.., y=..`, the icon underfoot, steps left, and a 5x5 view
    centred on the agent with north at the top and columns/rows labelled with absolute
    coordinates. `?` Unseen, `.` Empty, `B` Bomb, `F` Flower, `#` outside the grid, `@`
    the agent. `info["observation"]` holds the same as a `TreasureObservation`.

    ## Rewards
    +1 for stepping onto the Bomb; 0 otherwise (Flower, timeout, every other step).

    ## Episode end
    Terminated on stepping onto the Bomb (success) or a Flower (failure). Truncated when
    the 30-step budget is spent. Every command, including a bump, a reveal, a wait or an
    unparseable reply, spends one step.

    ## Rules as implemented
    - Coordinates: x is the column (0 = west edge, 7 = east edge), y the row (0 = south
      edge, 7 = north edge); north increases y. (0,0) is the bottom-left corner.
    - The icon counts (1 Bomb, 10 Flowers, 53 Empty) include the start tile. The start
      tile is always Empty and starts revealed; the Bomb and the Flowers are placed
      uniformly at random among the other 63 tiles.
    - Moving off the grid leaves the agent in place and spends a step (event `bump`).
    - Moving onto an unrevealed tile reveals it first, then its icon takes effect.
    - `reveal` reveals the agent's own tile, which stepping onto it already revealed; it is
      kept as the specification writes it and so never shows anything new.
    - Cells of the 5x5 window beyond the grid edge show `#` (`"outside"` in the model).
    - Since nothing about a tile is known before stepping onto it, every policy is a
      sequence of new tiles; the best possible success rate is
      (1/11) * (1 - C(52,30)/C(63,30)) ~= 0.0909 (see docs/scenarios/treasure-hunt.md).

    ## Version history
    - v0: first release.
    - v1: parsing keeps the reading invariant (an `Action:` line is authoritative; quoted
      and negated text, and direction words used as places, are not read; several steps
      are rejected). Rules and rendering unchanged.
    - v2: reading is strict: every word of the command part (its `Action:` line, or the whole
      reply) must belong to the command, a filler word, or a clause that is not read (quotes,
      negations, questions, conditions, reasons); an unknown word, a typo or a scheduling word
      (`then`, `next turn`, `later`, ...) rejects the reply, naming the word (`Action: r, then
      east` was read as `east`). Prose without an `Action:` line is read only as a short
      order: a sentence that describes (`north at the top`) is not one. `Now:` and `Final
      answer:` mark the command too; `Wait,` before `Action:`, a negation across a dash (`Not
      X — Y`), a one-line JSON action with reasoning keys and `<tool_call>` wrappers are read.
      Each step's info records the command executed (`read_as`). Rules and rendering
      unchanged.
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
      (`Actually, east.`). Read as written now: `Now:`/`Answer:` lines of reasoning before
      the `Action:` line, a `### Action` heading, `\\boxed{...}`, a leaked chat token
      (`<|im_end|>`), and descriptive remarks beside the command (`(field 2)`, `- the west
      is fully explored`, `. East is a flower.`). Of 759 honest replies in the taught
      format, written independently of the parser, v3 rejected 13.6% and v4 1.2%, and
      neither misread one (the last 155, written after v4's changes and not tuned on: 5.2%
      and 1.3%). Rules and rendering unchanged; goldens regenerated (unchanged). Baselines
      re-measured under v4 over seeds 0-999: every figure as v3.
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

    name = "treasure-hunt"
    title = "Inverted-Symbol Treasure Hunt Grid"
    version = "5"
    max_steps = STEP_BUDGET
    action_schema = TreasureHuntAction
    observation_model = TreasureObservation

    def initial_state(self, rng: np.random.Generator, options: dict[str, Any]) -> TreasureState:
        if options:
            raise ValueError(f"treasure-hunt takes no options, got {sorted(options)}")
        return rules.initial_state(rng)

    def transition(
        self, state: TreasureState, action: Action, step_index: int
    ) -> Transition[TreasureState]:
        return rules.step(state, action)

    def observe(self, state: TreasureState, steps_used: int) -> dict[str, Any]:
        return render.observe(state, steps_used)

    def render_text(self, observation: dict[str, Any]) -> str:
        return render.render(observation)

    def parse(self, text: str) -> Action:
        return parsing.parse(text)

    def narrate(self, events: tuple[Event, ...]) -> str:
        return render.narrate(events)

    def valid_commands(self, state: TreasureState) -> list[str]:
        return list(parsing.GRAMMAR.valid)
