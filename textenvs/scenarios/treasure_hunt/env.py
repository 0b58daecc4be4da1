"""The Treasure Hunt env: wires state, rules, render and parse into a TextEnv."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.core.env import Event, TextEnv, Transition
from textenvs.scenarios.treasure_hunt import parse as parsing
from textenvs.scenarios.treasure_hunt import render, rules
from textenvs.scenarios.treasure_hunt.declaration import SCENARIO
from textenvs.scenarios.treasure_hunt.state import (
    STEP_BUDGET,
    Action,
    TreasureHuntAction,
    TreasureObservation,
    TreasureState,
)


class TreasureHuntEnv(TextEnv[TreasureState, Action], scenario=SCENARIO):
    """Inverted-Symbol Treasure Hunt Grid (`textenvs/TreasureHunt-v6`, `treasure-hunt`).

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
    One line a version; the detail is in `docs/scenarios/treasure-hunt.md` and, for the readings
    every scenario shares, `docs/changelog.md`.
    - v0: first release.
    - v1: reading 1 (direction words used as places are not read either).
    - v2: reading 2.
    - v3: reading 3.
    - v4: reading 4.
    - v5: reading 5 (issue 43).
    - v6: reading 6 (issue 53).
    """

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
