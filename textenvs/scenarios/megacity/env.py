"""The Megacity env: wires state, rules, render and parse into a TextEnv."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from textenvs.core.env import TextEnv, Transition
from textenvs.scenarios.megacity import parse as parsing
from textenvs.scenarios.megacity import render, rules
from textenvs.scenarios.megacity.state import (
    DIRECTIONS,
    KINDS,
    MATERIALS,
    STEP_BUDGET,
    Action,
    MegacityAction,
    MegacityObservation,
    MegacityState,
    adjacent,
    all_cells,
    cell_name,
    neighbours,
)


def conduit_paths() -> list[tuple[tuple[int, int], ...]]:
    """Every ordered path of 1-3 distinct, orthogonally adjacent cells."""
    paths: list[tuple[tuple[int, int], ...]] = [(c,) for c in all_cells()]
    for a in all_cells():
        for b in neighbours(a):
            paths.append((a, b))
            paths.extend((a, b, c) for c in neighbours(b) if c != a)
    assert all(adjacent(x, y) for path in paths for x, y in itertools.pairwise(path))
    return paths


WAIT = Action("wait")
PARAMETERS: dict[str, list[str]] = {
    "excavate": [cell_name(c) for c in all_cells()],
    "support": [f"{cell_name(c)} {m}" for c in all_cells() for m in MATERIALS],
    "vent": [f"{cell_name(c)} {d}" for c in all_cells() for d in DIRECTIONS],
    "conduit": [" ".join(cell_name(c) for c in path) for path in conduit_paths()],
    "district": [cell_name(c) for c in all_cells()],
}


class MegacityEnv(TextEnv[MegacityState, Action]):
    """Subterranean Megacity (`textenvs/Megacity-v0`, `megacity`).

    ## Description
    The agent plans an underground city on a 5x5 grid of rock (columns A-E west to east,
    rows 1-5 south to north). It must have six active districts at step 40 with structural
    integrity above 80, the air index above 60 and no power brownout. The physics are
    alien and hidden: stress creeps sideways along mineral seams, excavation unloads
    distant seam cells, the airflow reverses every 8 steps, conduits tap seams for power
    but strengthen their pull. Research reveals the equations rule by rule. The equations
    are identical in every episode; only the maps (seams, faults, stress, airflow) vary.

    ## Actions and command grammar
    | command | example | effect |
    |---|---|---|
    | `excavate CELL` | `excavate B3` | hollow out a chamber (load transfer) |
    | `support CELL MATERIAL` | `support C2 basalt` | place or replace a column |
    | `vent CELL DIRECTION` | `vent A1 east` | shaft from CELL to the edge, +2 flow along it |
    | `conduit CELL [CELL [CELL]]` | `conduit B2 B3 B4` | 1-3 adjacent cells in a path |
    | `district CELL` | `district B3` | district core in a supported, ventilated chamber |
    | `research` | | one research point (clue, then equation; unlocks materials) |
    | `scan` | | chart seams and faults (shown from then on) |
    | `wait` | | let a step pass |

    Aliases: `dig B3`, `place support at C2 with timber`, `support basalt C2`, `vent a1 e`,
    `dig a ventilation shaft from A1 towards the north`, `install power conduit on B2, B3`,
    `build district core at B3`, `research anomaly`, `diagnostic scan`. Case-insensitive;
    prose and markdown around one command are fine, two different commands are an error.
    Bad parameters are named: "C9 is outside the 5x5 grid (A-E, 1-5)", "B2 and B4 are not
    adjacent", "'granite' is not a support material". Structured form (function calling):
    `{"action": "support", "cells": ["C2"], "material": "basalt"}`.

    ## Observation
    Step, districts, integrity, air, power (and its last change, brownout flag), the last
    step's report, the 5x5 stress map, the sites map (rock/chamber/supported/district,
    conduits), supports, conduits and shafts, the airflow field per cell (`E2N1` = 2 east
    and 1 north, strength 3), the geology once scanned, the components with power costs
    and qualitative descriptors (locked ones marked), research progress with each rule's
    status and revealed text. Never the equations before research decodes them.
    `info["observation"]` holds the same as a `MegacityObservation`.

    ## Rewards (every term per step, summed; listed by name in the `reward` event)
    +2 per point integrity rose over the previous step; +1 per point air rose; +5 per
    district activated; +3 the first time power > 80; +4 per rule fully decoded; +0.5 if
    integrity > 80 and air > 60; -2 per point integrity < 80; -1 per point air < 60;
    -40 on collapse (integrity 0) or suffocation (air 0); +40 victory at step 40.

    ## Episode end
    Terminated on collapse or suffocation (failure), or at step 40 with victory (success).
    Otherwise truncated when the 40-step budget is spent. Every command, refused actions
    and unparseable replies included, spends one step.

    ## Rules as implemented
    - One step = the action's immediate effect (power is paid now; an action that cannot
      be done or afforded is refused, costs nothing, and time still passes), then the
      tick: seam flow, conduit damping, power generation/demand, air toward its target,
      integrity recomputed. Reward terms compare with the state before the step.
    - Victory is checked on the state after the 40th step: >= 6 districts, integrity > 80,
      air > 60, and no brownout in that step ("within the power budget"); it then ends the
      episode with `terminated=True`, success and +40. Thresholds are checked at step 40
      only; the per-step penalties already price any dip before it.
    - A catastrophe step also carries the other terms of that step (e.g. -2 per point
      below 80), then -40; all terms are additive and independent.
    - Integrity is a function of the current state (100 minus the chambers' excess load),
      so it recovers when loads are fixed; `+2 per point` pays for every recovery.
    - Power storage is clamped to 0-100; demand it cannot cover is a brownout.
    - Research: 5 rules x 2 points; mycelium unlocks at 2 points, lodestone at 4.
    - Equations and constants: `physics.py`, explained in docs/scenarios/megacity.md.
    - The `random` baseline draws one of the eight command forms uniformly, then its
      parameters uniformly (25 cells, 100 supports, 100 shafts, 293 conduit paths).

    ## Version history
    - v0: first release.
    """

    name = "megacity"
    title = "Subterranean Megacity"
    version = "1"
    max_steps = STEP_BUDGET
    action_schema = MegacityAction
    observation_model = MegacityObservation

    def initial_state(self, rng: np.random.Generator, options: dict[str, Any]) -> MegacityState:
        if options:
            raise ValueError(f"megacity takes no options, got {sorted(options)}")
        return rules.initial_state(rng)

    def transition(
        self, state: MegacityState, action: Action, step_index: int
    ) -> Transition[MegacityState]:
        return rules.step(state, action)

    def on_wasted_turn(self, state: MegacityState, step_index: int) -> Transition[MegacityState]:
        """An unreadable reply is a turn in which nothing is built: time passes as after
        `wait`, so the city's clock never falls behind the turn budget."""
        return rules.step(state, WAIT, note="Your reply was unreadable: nothing was built.")

    def observe(self, state: MegacityState, steps_used: int) -> dict[str, Any]:
        return render.observe(state, steps_used)

    def render_text(self, observation: dict[str, Any]) -> str:  # type: ignore[override]
        return render.render(observation)

    def parse(self, text: str) -> Action:
        return parsing.parse(text)

    def valid_commands(self, state: MegacityState) -> list[str]:
        return list(parsing.VALID)

    def random_command(self, info: dict[str, Any], rng: np.random.Generator) -> str:
        """A command form uniformly from the eight, then its parameters uniformly from
        every well-formed choice (otherwise the 293 conduit paths would swamp the rest)."""
        kind = KINDS[int(rng.integers(len(KINDS)))]
        choices = PARAMETERS.get(kind)
        if choices is None:
            return kind
        return f"{kind} {choices[int(rng.integers(len(choices)))]}"
