"""The EM Anomaly env: wires state, rules, render and parse into a TextEnv."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.core.env import TextEnv, Transition
from textenvs.core.variants import withheld_option
from textenvs.scenarios.em_anomaly import parse as parsing
from textenvs.scenarios.em_anomaly import render, rules
from textenvs.scenarios.em_anomaly.declaration import SCENARIO
from textenvs.scenarios.em_anomaly.state import (
    STEP_BUDGET,
    Action,
    EMAnomalyAction,
    EMObservation,
    EMState,
)


class EMAnomalyEnv(TextEnv[EMState, Action], scenario=SCENARIO):
    """Electromagnetic Field Anomaly Mapping (`textenvs/EMAnomaly-v6`, `em-anomaly`).

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
    One line a version; the detail is in `docs/scenarios/em-anomaly.md` and, for the readings
    every scenario shares, `docs/changelog.md`.
    - v0: first release.
    - v1: reading 1 (directions used as places are not read either).
    - v2: reading 2.
    - v3: reading 3.
    - v4: reading 4 (`mark the anomaly`, `rotate to the left` read as written).
    - v5: reading 5 (issue 43).
    - v6: reading 6 (issue 53).
    """

    max_steps = STEP_BUDGET
    action_schema = EMAnomalyAction
    observation_model = EMObservation
    report_lines = (*TextEnv.report_lines, render.LAST_ACTION)

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
