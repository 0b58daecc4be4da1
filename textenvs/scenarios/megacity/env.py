"""The Megacity env: wires state, rules, render and parse into a TextEnv."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import numpy as np

from textenvs.core.env import TextEnv, Transition
from textenvs.core.variants import withheld_option
from textenvs.scenarios.megacity import maps, render, rules
from textenvs.scenarios.megacity import parse as parsing
from textenvs.scenarios.megacity.declaration import SCENARIO
from textenvs.scenarios.megacity.parameters import PHYSICS, Physics
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


class MegacityEnv(TextEnv[MegacityState, Action], scenario=SCENARIO):
    """Subterranean Megacity (`textenvs/Megacity-v7`, `megacity`).

    ## Description
    The agent plans an underground city on a 5x5 grid of rock (columns A-E west to east,
    rows 1-5 south to north). It must have six running districts at step 40 and, from its
    first district on, keep structural integrity above 80, the air index above 60 and
    power out of brownout at every step. The physics are alien and hidden: chambers on or
    beside a mineral seam are pulled sideways (surface materials fail there), stress
    creeps along seams, excavating a seam cell unloads distant cells, the airflow
    reverses every 8 steps, conduits tap seams for power but double the pull where they
    lie, and laying a conduit off the seams eases its cell once. Research reveals the
    equations rule by rule and unlocks the materials that hold sideways pull. The
    equations are identical in every episode and at every level; only the maps (seams,
    faults, stress, airflow) vary, by seed and by level (0-3, default 2).

    ## Actions and command grammar
    | command | example | effect |
    |---|---|---|
    | `excavate CELL` | `excavate B3` | hollow out a chamber (load transfer) |
    | `support CELL MATERIAL` | `support C2 basalt` | place or replace a column |
    | `vent CELL DIRECTION` | `vent A1 east` | shaft from CELL to the edge, +2 flow along it |
    | `conduit CELL [CELL [CELL]]` | `conduit B2 B3 B4` | 1-3 adjacent cells, 2 power per new cell |
    | `district CELL` | `district B3` | district core in a supported, ventilated chamber |
    | `research` | | one research point (clue, then equation; unlocks materials) |
    | `scan` | | chart seams and faults (shown from then on) |
    | `wait` | | let a step pass |

    Aliases: `dig B3`, `place support at C2 with timber`, `support basalt C2`, `vent a1 e`,
    `dig a ventilation shaft from A1 towards the north`, `install power conduit on B2, B3`,
    `build district core at B3`, `research anomaly`, `diagnostic scan`. Case-insensitive;
    prose and markdown around one command are fine, two different commands are an error.
    Nothing is cut short: ranges (`excavate B3 to B5`), open choices (`B3 (or C3)`), an
    argument to `research`/`scan`/`wait` (`scan B3`, `research gravity`) and a second
    order without its cell (`excavate B3 and build a district there`) are rejected.
    Bad parameters are named: "C9 is outside the 5x5 grid (A-E, 1-5)", "B2 and B4 are not
    adjacent", "'granite' is not a support material". Structured form (function calling):
    `{"action": "support", "cells": ["C2"], "material": "basalt"}`.

    ## Observation
    Step, districts (each with its airflow strength; offline ones with the reason),
    integrity, air and its target, power (its last change with the action's cost, the
    generation and the districts' draw per step, brownout flag), whether the thresholds
    still hold (or why victory is forfeited), the last step's report, the 5x5 stress map,
    the sites map (rock/column in undug rock/chamber/supported/running or offline
    district, conduits), supports, conduits and shafts, the airflow field per cell
    (`E2N1` = 2 east and 1 north, strength 3), the geology once scanned, the components
    with power costs and qualitative descriptors (locked ones marked), research progress
    with each rule's status and revealed text.
    Never the equations before research decodes them. `info["observation"]` holds the
    same as a `MegacityObservation`.

    ## Rewards (every term per step, summed; listed by name in the `reward` event)
    +2 per point integrity rose over the previous step and -2 per point it fell; +1 per
    point air rose and -1 per point it fell; +5 per district activated, for the first six
    (the goal); +3 the first time power > 80; +4 per rule fully decoded; +0.5 if
    integrity > 80 and air > 60; -2 per point integrity < 80; -1 per point air < 60; -40
    on collapse (integrity 0) or suffocation (air 0); +40 victory at step 40, and with it
    `plan_quality`: +0.5 per point of integrity above 80 and of air above 60 at the end,
    +0.1 per unit of power left, +0.5 per step that ended with six districts running.

    ## Episode end
    Terminated on collapse or suffocation (failure), or at step 40 with victory (success).
    Otherwise truncated when the 40-step budget is spent. Every reply spends one step and
    advances the city's clock: refused actions and unreadable replies are steps in which
    nothing is built (as after `wait`), so the clock and the budget never drift apart.

    ## Rules as implemented
    - Levels (`options={"level": 0..3}` at reset, `level=` when making the env,
      `--env-option level=N`; default 2): a level changes only how the initial maps are
      drawn, never the physics, costs or rewards. Level 2 draws exactly v3's maps for
      every seed. Two inner seams at every level (four cells clear of pull, so research
      always matters); base rock stress before the seam (+10) and fault (+25) terms:
      | level | rock stress | faults | current per cell | crosswind |
      |---|---|---|---|---|
      | 0 | 36-71 | 1 | 1 | 50% of cells |
      | 1 | 50-87 | 3 | 1 | 50% |
      | 2 (default) | 54-91 | 3 | 1-3 | 35% |
      | 3 | 60-95 | 5 | 1 | 50% |
      Levels 0 and 1 ask for research, columns and shafts placed for both airflow
      phases, rarely relief digs or seam-flow timing; levels 2 and 3 ask for all of
      them (measured per level in docs/scenarios/megacity.md).
    - One step = the action's immediate effect (power is paid now; an action that cannot
      be done or afforded is refused with the reason, costs nothing, and time still
      passes), then the tick: seam flow, power generation and demand, air toward its
      target, integrity recomputed, which districts run, threshold check.
      Reward terms compare with the state before the step.
    - Unreadable reply (`on_wasted_turn`): the step of a `wait`, reported as "Your reply
      was unreadable: nothing was built."; `info["invalid_action"]` is true.
    - "Consistently above": from the step the first district opens, a step ending with
      integrity <= 80, air <= 60 or a brownout is remembered (`breach`, shown in the
      observation) and forfeits victory for the rest of the episode.
    - A district runs while its column carries the chamber's whole load (zero excess), the
      airflow strength at its cell is >= 3 and there is no brownout; otherwise it is
      offline (shown as `X`, with the reason). Victory is judged on the state after the
      40th step, whatever the replies were: >= 6 running districts, no breach,
      integrity > 80 and air > 60; it ends the episode with `terminated=True`, success
      and +40. The airflow reverses exactly as the 40th step completes, so every district
      must run in both phases.
    - No farmable reward: the +2 / +1 per point gained are matched by -2 / -1 per point
      lost (`integrity_loss`, `air_loss`), so a dip the agent causes costs what its
      recovery pays; over an episode these two terms sum to 2 x (final - 100) and
      (final - 85). The spec's below-threshold penalties apply on top.
    - A catastrophe step also carries the other terms of that step, then -40.
    - Seam flow: a conduit doubles a cell's share before rounding (floor of 24%), and
      every receiving seam cell is capped at 100 before it passes its own share on, so a
      full cell loses stress (95 taking and passing 11 ends at 89); the research text
      says so. The stress map is the actual stress from step 0 on: `scan` charts only
      the seams and faults. A conduit costs 2 per cell without a conduit yet.
    - Conduit damping is a one-off: a conduit cell laid off the seams loses its stress
      once, when laid (a recurring drain made any cell buildable).
    - The air index moves toward its target by up to 8 a step, so it reaches the target
      within the last six steps: opening late does not dodge the air rule, which tests
      that the districts' ventilation holds at the end (in the final airflow phase) and
      at every step since the first district.
    - Beyond the specification, `plan_quality` at victory ranks winning plans (margins,
      power left, how long six districts have run); the +5 per district stops at six.
    - Power storage is clamped to 0-100; demand it cannot cover is a brownout (all
      districts offline, and a breach once a district exists).
    - Research: 5 rules x 2 points (clue, then equation); mycelium unlocks at 2 points,
      lodestone at 4. Only mycelium holds a seam's full sideways pull, and only four cells
      per map are clear of it, so every winning plan researches.
    - Equations and constants: `physics.py`, explained in docs/scenarios/megacity.md.
    - The `random` baseline draws one of the eight command forms uniformly, then its
      parameters uniformly (25 cells, 100 supports, 100 shafts, 293 conduit paths).
    - Withheld-knowledge variant (`options={"withheld": True}`, opt-in; default play is
      unchanged): for learning across episodes (`--trials K`). Research still costs,
      unlocks materials and pays +4 per decoded rule, but the observation shows no rule
      text while playing; the final observation shows all five rules' decoded texts.
      Its rules text (`prompts/megacity-withheld.md`) leaves out the qualitative
      physics paragraph. An agent that remembers earlier episodes' ends knows the
      equations from step 0. `info["observation"]` carries `withheld: true`.

    ## Version history
    One line a version; the detail is in `docs/scenarios/megacity.md` and, for the readings
    every scenario shares, `docs/changelog.md`.
    - v0: first release.
    - v1: every reply advances the clock; thresholds hold at every step; no farming.
    - v2: reward plans, not a recipe (one-off conduit damping, faster air, harder rock); reading 2.
    - v3: reading 3.
    - v4: reading 4.
    - v5: levels 0-3 (reset option `level`; level 2, the default, draws v4's maps).
    - v6: the texts say what the physics does; the observation shows more; reading 5 (issue 43).
    - v7: the texts say the numbers as the physics does them; reading 6 (issue 53).
    """

    max_steps = STEP_BUDGET
    action_schema = MegacityAction
    observation_model = MegacityObservation

    levels = maps.LEVELS
    default_level = maps.DEFAULT_LEVEL

    def __init__(
        self,
        render_mode: str | None = None,
        level: int = maps.DEFAULT_LEVEL,
        physics: Physics = PHYSICS,
    ) -> None:
        super().__init__(render_mode=render_mode)
        self.level = maps.checked_level(level)
        #: the physics its worlds run on: the published one, or a variant (reference runs)
        self.physics = physics

    def initial_state(self, rng: np.random.Generator, options: dict[str, Any]) -> MegacityState:
        unknown = sorted(set(options) - {"level", "withheld"})
        if unknown:
            raise ValueError(
                f"megacity takes only the options 'level' and 'withheld', got {unknown}"
            )
        level = maps.checked_level(options.get("level", self.level))
        state = maps.initial_state(rng, level)
        return replace(state, withheld=withheld_option(options), physics=self.physics)

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
