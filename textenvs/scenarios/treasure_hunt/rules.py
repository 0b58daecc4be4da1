"""Treasure Hunt rules: pure functions of (state, action), no I/O and no text."""

from __future__ import annotations

import numpy as np

from textenvs.core.env import Transition
from textenvs.scenarios.treasure_hunt.state import (
    BOMBS,
    FLOWERS,
    MOVES,
    SIZE,
    START,
    Action,
    Cell,
    Icon,
    TreasureState,
)


def initial_state(rng: np.random.Generator) -> TreasureState:
    """Start tile (0,0) is Empty and revealed; Bomb and Flowers are placed uniformly among
    the other 63 tiles (so the counts 1/10/53 include the start tile)."""
    others = [(x, y) for y in range(SIZE) for x in range(SIZE) if (x, y) != START]
    chosen = rng.choice(len(others), size=BOMBS + FLOWERS, replace=False)
    icons = [[Icon.EMPTY] * SIZE for _ in range(SIZE)]
    for rank, index in enumerate(chosen):
        x, y = others[int(index)]
        icons[y][x] = Icon.BOMB if rank < BOMBS else Icon.FLOWER
    return TreasureState(
        icons=tuple(tuple(row) for row in icons),
        revealed=frozenset({START}),
        position=START,
    )


def inside(cell: Cell) -> bool:
    return 0 <= cell[0] < SIZE and 0 <= cell[1] < SIZE


def step(state: TreasureState, action: Action) -> Transition[TreasureState]:
    """One action. Stepping onto a tile reveals it first, then its icon takes effect."""
    here = state.position
    if action is Action.WAIT:
        return Transition(state, events=({"type": "wait", "at": list(here)},))
    if action is Action.REVEAL:
        # Reveal shows the agent's own tile, which stepping onto it already revealed.
        event = {"type": "reveal", "at": list(here), "icon": state.icon(here).value, "own": True}
        return Transition(state, events=(event,))

    dx, dy = MOVES[action]
    target = (here[0] + dx, here[1] + dy)
    if not inside(target):
        event = {"type": "bump", "direction": action.value, "at": list(here)}
        return Transition(state, events=(event,))

    events: list[dict[str, object]] = []
    revealed = state.revealed
    icon = state.icon(target)
    if target not in revealed:
        revealed = revealed | {target}
        events.append({"type": "reveal", "at": list(target), "icon": icon.value})
    events.append({"type": "move", "direction": action.value, "to": list(target)})
    moved = TreasureState(icons=state.icons, revealed=revealed, position=target)
    if icon is Icon.BOMB:
        events.append({"type": "treasure", "at": list(target)})
        return Transition(moved, reward=1.0, terminated=True, success=True, events=tuple(events))
    if icon is Icon.FLOWER:
        events.append({"type": "trap", "at": list(target)})
        return Transition(moved, terminated=True, events=tuple(events))
    return Transition(moved, events=tuple(events))
