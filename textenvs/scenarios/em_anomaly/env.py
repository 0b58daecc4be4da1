"""The EM Anomaly env: wires state, rules, render and parse into a TextEnv."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.core.env import TextEnv, Transition
from textenvs.core.variants import withheld_option
from textenvs.scenarios.em_anomaly import parse as parsing
from textenvs.scenarios.em_anomaly import render, rules
from textenvs.scenarios.em_anomaly.state import (
    STEP_BUDGET,
    Action,
    EMAnomalyAction,
    EMObservation,
    EMState,
)


class EMAnomalyEnv(TextEnv[EMState, Action]):
    """Electromagnetic Field Anomaly Mapping (`textenvs/EMAnomaly-v5`, `em-anomaly`).

    ## Description
    A 15x15 laboratory floor has insulating walls on 45 tiles (20%) and one hidden
    Vulnerability Node on a free tile. The node makes a static field,
    FieldLevel = max(0, 3 - ManhattanDistance(tile, node)), which walls shield. The agent
    sees only the field on its own 3x3 neighbourhood and must Mark within Manhattan
    distance 1 of the node within 30 steps.

    ## Actions and command grammar
    | command | aliases | effect |
    |---|---|---|
    | `north` | `n`, `move north`, `MoveNorth`, `go north`, `up` | move y + 1, face north |
    | `south` | `s`, `move south`, `MoveSouth`, `go south`, `down` | move y - 1, face south |
    | `east` | `e`, `move east`, `MoveEast`, `go east` | move x + 1, face east |
    | `west` | `w`, `move west`, `MoveWest`, `go west` | move x - 1, face west |
    | `rotate left` | `RotateLeft`, `turn left`, `rotate counterclockwise` | face 90 deg left |
    | `rotate right` | `RotateRight`, `turn right`, `rotate clockwise` | face 90 deg right |
    | `mark` | `m`, `Mark node`, `mark anomaly`, `mark here` | declare the node; ends |

    Commands are case-insensitive and may sit inside prose or markdown
    (`Action: mark`). A reply runs only if it has exactly one reading (see "The reading
    invariant" in docs/architecture.md): a final `Action:` line is authoritative; quoted
    or negated text is not read, nor a direction used as a place (`the wall to the
    north`); two different commands, or one written as several steps, are rejected.
    Bare `left`/`right` are rejected (rotation or move?). Structured form (function
    calling): `{"action": "rotate left"}`.

    ## Observation
    Text: the field level on the agent's tile, its facing, steps left, what the last
    command did, and a 3x3 field scan centred on the agent with north at the top: `0`-`3`
    on free tiles, `#` an insulating wall, `x` outside the lab, the agent's tile in
    brackets. `info["observation"]` holds the same as an `EMObservation`. There are no
    coordinates, no map and no node position in either.

    ## Rewards
    +1 for a Mark within Manhattan distance 1 of the node (on it or orthogonally next to
    it); 0 for everything else (a wrong Mark, running out of steps, every other step).

    ## Episode end
    Terminated by `mark`, right or wrong. Truncated when the 30-step budget is spent.
    Every command spends one step: moves, blocked moves, rotations, unreadable replies.

    ## Rules as implemented
    - Grid: x is the column (west to east), y the row (south to north), both 0-14; these
      coordinates exist only inside the hidden state.
    - Walls: exactly 45 tiles (round(0.2 * 225)), uniform among layouts whose 180 free
      tiles form one orthogonally connected region: rejection sampling from the episode
      generator, at most 64 draws (each succeeds about 43% of the time), then a constructive
      fallback that adds walls in random order, skipping any that would split the free
      tiles. Every world is validated (count, connectivity, placements, field).
    - The node is uniform among free tiles; then the agent spawns uniform among free
      tiles (it may be the node's own tile or next to it: the specification asks only for
      a free tile) facing a uniform direction.
    - Shielding (Faraday shadow): the field travels through free tiles along shortest grid
      paths. A free tile whose Manhattan distance d to the node is at most 2 reads 3 - d
      if some shortest (monotone) path of d orthogonal steps from the node to it crosses
      only free tiles, i.e. its walking distance equals d; otherwise a wall shadows it and
      it reads 0. Tiles at distance 3 or more read 0. Readings are therefore never
      wrong, only missing: a non-zero reading is exactly 3 - distance, and from a tile
      reading 1 or 2 some orthogonal neighbour reads one more. Computed once per episode.
    - The view shows walls as `#`/"wall" and cells beyond the grid edge as `x`/"outside",
      so a player can see which moves would be blocked.
    - A move into a wall or off the grid is illegal: the agent keeps its tile and its
      facing, the step is spent, and the next observation says "BLOCKED by an insulating
      wall" or "BLOCKED by the edge of the lab" (`last_result` "blocked_by_wall" /
      "blocked_by_edge"; event `blocked`).
    - A legal move also turns the agent to face the direction moved. Rotations change
      only the facing. Facing has no other effect: moves are compass moves and the view
      is always north-up.
    - After an unreadable command the observation reports `last_result` "wasted".
    - Events carry no coordinates (`move`, `blocked`, `rotate`, `mark` with `success`).
    - Withheld-knowledge variant (`options={"withheld": True}`, opt-in; default play is
      unchanged): for learning across episodes (`--trials K`). Its rules text
      (`prompts/em-anomaly-withheld.md`) and observation do not say what the readings
      mean (no field formula, no "mark where it reads 2 or 3"); the final observation
      adds the node's Manhattan distance from the tile the episode ended on
      (`node_distance`), so the meaning of each reading can be learned from the ends of
      episodes. `info["observation"]` carries `withheld: true`. Same world per seed.

    ## Version history
    - v0: first release.
    - v1: parsing keeps the reading invariant (an `Action:` line is authoritative; quoted
      and negated text, and directions used as places, are not read; several steps are
      rejected). Rules and rendering unchanged.
    - v2: reading is strict: every word of the command part (its `Action:` line, or the whole
      reply) must belong to the command, a filler word, or a clause that is not read (quotes,
      negations, questions, conditions, reasons); an unknown word, a typo or a scheduling word
      (`then`, `next turn`, `later`, ...) rejects the reply, naming the word (`Action: m;
      north` was read as `north`). Prose without an `Action:` line is read only as a short
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
      (`Actually, east.`). Read as written now: `mark the anomaly`, `mark this tile`,
      `rotate to the left` (listed among the valid spellings, which is the one change to the
      goldens), `Now:`/`Answer:` lines of reasoning before the `Action:` line, a `###
      Action` heading, `\\boxed{...}`, a leaked chat token (`<|im_end|>`), and descriptive
      remarks beside the command (`(field 2)`, `- the west is fully explored`, `. East is a
      flower.`). Of 759 honest replies in the taught format, written independently of the
      parser, v3 rejected 13.6% and v4 1.2%, and neither misread one (the last 155, written
      after v4's changes and not tuned on: 5.2% and 1.3%). Rules and rendering unchanged;
      goldens regenerated. Baselines re-measured under v4 over seeds 0-999: every figure as
      v3.
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

    name = "em-anomaly"
    title = "Electromagnetic Field Anomaly Mapping"
    version = "5"
    max_steps = STEP_BUDGET
    action_schema = EMAnomalyAction
    observation_model = EMObservation

    def initial_state(self, rng: np.random.Generator, options: dict[str, Any]) -> EMState:
        unknown = sorted(set(options) - {"withheld"})
        if unknown:
            raise ValueError(f"em-anomaly takes only the option 'withheld', got {unknown}")
        return rules.initial_state(rng, withheld_option(options))

    def transition(self, state: EMState, action: Action, step_index: int) -> Transition[EMState]:
        return rules.step(state, action, step_index)

    def observe(self, state: EMState, steps_used: int) -> dict[str, Any]:
        return render.observe_dict(state, steps_used)

    def render_text(self, observation: dict[str, Any]) -> str:  # type: ignore[override]
        return render.render(observation)

    def parse(self, text: str) -> Action:
        return parsing.parse(text)

    def valid_commands(self, state: EMState) -> list[str]:
        return list(parsing.GRAMMAR.valid)
