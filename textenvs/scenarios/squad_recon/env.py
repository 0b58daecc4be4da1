"""The Squad Recon env: wires state, rules, render and parse into a TextEnv."""

from __future__ import annotations

from typing import Any

import numpy as np

from textenvs.core.env import TextEnv, Transition
from textenvs.scenarios.squad_recon import parse as parsing
from textenvs.scenarios.squad_recon import render, rules
from textenvs.scenarios.squad_recon.declaration import SCENARIO
from textenvs.scenarios.squad_recon.state import (
    STEP_BUDGET,
    Order,
    Orders,
    ReconObservation,
    ReconState,
    SquadReconAction,
)

ORDER_WORDS = "north|south|east|west|hold|attack"


class SquadReconEnv(TextEnv[ReconState, Orders], scenario=SCENARIO):
    """Squad Reconnaissance and Elimination (`textenvs/SquadRecon-v6`, `squad-recon`).

    ## Description
    A 15x15 battlefield of open ground, walls and forest hides two enemy camps of
    strength 2-6. Three friendly squads A, B, C of strength 1-4 start in the south-west
    corner. Find both camps under fog of war and destroy them within 40 steps: an attack
    succeeds when the combined strength of the squads next to the camp exceeds the camp's.

    ## Actions and command grammar
    One command per step orders every squad at once: `A north; B east; C attack`.
    | order | aliases | effect |
    |---|---|---|
    | `north` | `n`, `move north`, `MoveNorth`, `go north`, `up` | y + 1 |
    | `south` | `s`, `move south`, `MoveSouth`, `go south`, `down` | y - 1 |
    | `east` | `e`, `move east`, `MoveEast`, `go east`, `right` | x + 1 |
    | `west` | `w`, `move west`, `MoveWest`, `go west`, `left` | x - 1 |
    | `hold` | `h`, `HoldPosition`, `stay`, `wait`, `halt`, `holds` | stay (sensors still sweep) |
    | `attack` | `AttackEnemyCamp`, `attack camp`, `assault`, `attacks` | attack the adjacent camp |

    Squads: `A`, `B`, `C` (also `squad a`, `alpha`, `bravo`, `charlie`); a group shares
    one order (`A+B north`, `A,B north`, `A and B north`, `A/B north`, `A & B north`,
    `Squads A and B hold`); `all <order>` and a bare `<order>` order every squad. Orders
    are joined by `;` (or `,`, `|`, `and`, a new line); a squad `X` may be written
    `X north`, `X: north`, `X -> north`, `X should move north`. Commands are
    case-insensitive and may sit inside prose or markdown (`Action: A north; B east`).
    A reply runs only if it has exactly one reading (see "The reading invariant" in
    docs/architecture.md): a final `Action:` line is authoritative; quoted or negated
    text is not read. A squad given two different orders, an unknown squad (`D north`),
    a choice (`A or B north`), an exception (`all north except C`) and orders for later
    turns (`A north, then next turn B east`) are errors (a wasted turn).
    Structured form: `{"a": "north", "b": "east", "c": "attack"}`.

    ## Observation
    Text: the last step's report, camps eliminated `k/2`, steps left, the total active
    strength, each squad's position, strength and status, the camps seen so far with
    their strength, and the merged 15x15 tactical map (north at the top): `A`/`B`/`C`
    squads, `*` several squads on one cell, `E` enemy camp, `x` eliminated camp, `.`
    open, `#` wall, `T` forest, `?` unseen. `info["observation"]` holds the same as a
    `ReconObservation`.

    ## Rewards
    +0.5 for each camp eliminated (the step it falls); 0 otherwise. Maximum 1.0.

    ## Episode end
    Terminated when both camps are eliminated (success) or every squad is destroyed.
    Truncated when the 40-step budget is spent. Every command, including an unreadable
    one, spends one step.

    ## Rules as implemented
    - Coordinates: x is the column (0 west .. 14 east), y the row (0 south .. 14 north).
      Squads start at A (0,0), B (1,0), C (0,1); the 4x4 corner x<4, y<4 is open ground.
    - Terrain: 3-5 straight wall segments (length 3-6) and 4-6 grown forest patches
      (3-7 cells). Walls and forest block movement; only forest blocks sight.
    - Camps stand on open ground, never in the square x<5, y<5 (which holds every start
      window, so no camp is seen before the first move), at least 3 apart (Manhattan),
      so no cell is next to both. A standing camp blocks movement into its cell; an
      eliminated camp becomes open ground (`x` on the map).
    - Reachability: both camps have an open neighbour reachable from the start while
      both stand. Maps are redrawn until this holds (at most 50 tries; an all-open
      field is the never-observed fallback).
    - Orders: one per squad per step; a squad without an order holds. Orders for a
      destroyed squad are ignored and reported (except through `all`).
    - Resolution within a step: (1) all moves at once, blocked only by the map edge,
      walls, forest and standing camps; squads never block each other and may share a
      cell; a blocked move spends the order. (2) Every active squad's sensor sweeps its
      7x7 window (Chebyshev radius 3). (3) Attacks: an `attack` order by a squad
      orthogonally adjacent to a standing camp makes that camp fight EVERY active squad
      orthogonally adjacent to it after the moves (attackers or not). If their combined
      strength is greater than the camp's, the camp is eliminated (+0.5); otherwise all
      of them are destroyed. An attack order with no adjacent camp does nothing.
      (4) End conditions.
    - Line of sight: a cell in the window is seen unless a forest cell lies strictly
      between, i.e. the straight line between the two cell centres passes through the
      interior of a forest cell (a line through a corner where cells touch passes
      neither). A forest cell itself is seen. Walls do not block sight.
    - Fog: the map shows every cell some sensor has ever seen (terrain never changes);
      unseen cells are `?`. A camp, and its strength, is shown once its cell has been
      seen; unseen camps never appear. Destroyed squads' sensors stop.
    - The step report appears once, after the step that produced it (not after a
      wasted turn).

    ## Version history
    One line a version; the detail is in `docs/scenarios/squad-recon.md` and, for the readings
    every scenario shares, `docs/changelog.md`.
    - v0: first release.
    - v1: a grouped order orders every squad of the group; reading 1.
    - v2: reading 2.
    - v3: reading 3 (a conditional order beside others rejects the reply).
    - v4: reading 4 (`C is east` says where a squad is and rejects the reply).
    - v5: reading 5 (issue 43).
    - v6: reading 6 (issue 53); holds in other words read; no exception form.
    """

    max_steps = STEP_BUDGET
    action_schema = SquadReconAction
    observation_model = ReconObservation

    def initial_state(self, rng: np.random.Generator, options: dict[str, Any]) -> ReconState:
        if options:
            raise ValueError(f"squad-recon takes no options, got {sorted(options)}")
        return rules.initial_state(rng)

    def transition(
        self, state: ReconState, action: Orders, step_index: int
    ) -> Transition[ReconState]:
        return rules.step(state, action, step_index)

    def observe(self, state: ReconState, steps_used: int) -> dict[str, Any]:
        return render.observe(state, steps_used)

    def render_text(self, observation: dict[str, Any]) -> str:  # type: ignore[override]
        return render.render(observation)

    def parse(self, text: str) -> Orders:
        valid = self.valid_commands(self._state) if self._state is not None else parsing.VALID
        return parsing.parse(text, valid)

    def valid_commands(self, state: ReconState) -> list[str]:
        active = [s.name for s in state.squads if s.active]
        forms = [f"{name} {ORDER_WORDS}" for name in active]
        forms.append(f"all {ORDER_WORDS}")
        forms.append("orders joined by ';', e.g. A north; B east; C attack (unordered squads hold)")
        return forms

    def random_command(self, info: dict[str, Any], rng: np.random.Generator) -> str:
        """Each active squad gets a uniformly random order of the six."""
        orders = list(Order)
        active = [s["name"] for s in info["observation"]["squads"] if s["status"] == "active"]
        picks = [f"{name} {orders[int(rng.integers(len(orders)))].value}" for name in active]
        return "; ".join(picks) if picks else "all hold"
