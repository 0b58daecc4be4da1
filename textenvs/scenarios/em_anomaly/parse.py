"""EM Anomaly commands: text -> Action.

Bare `left`/`right` are not accepted: they could mean a rotation or a move west/east, and
guessing would be worse than asking again.
"""

from __future__ import annotations

from textenvs.core.parsing import ParseError, clean, normalise
from textenvs.core.phrases import PhraseGrammar
from textenvs.scenarios.em_anomaly.state import Action

GRAMMAR: PhraseGrammar[Action] = PhraseGrammar(
    {
        Action.NORTH: ["north", "n", "move north", "MoveNorth", "go north", "up"],
        Action.SOUTH: ["south", "s", "move south", "MoveSouth", "go south", "down"],
        Action.EAST: ["east", "e", "move east", "MoveEast", "go east"],
        Action.WEST: ["west", "w", "move west", "MoveWest", "go west"],
        Action.ROTATE_LEFT: [
            "rotate left",
            "RotateLeft",
            "turn left",
            "rotate counterclockwise",
            "rotate to the left",
            "turn to the left",
        ],
        Action.ROTATE_RIGHT: [
            "rotate right",
            "RotateRight",
            "turn right",
            "rotate clockwise",
            "rotate to the right",
            "turn to the right",
        ],
        Action.MARK: ["mark", "m", "Mark node", "mark anomaly", "mark here"],
    },
    describe=lambda action: action.value,
    # "pick up", "look down": orders in prose only after a verb ("go up").
    weak=["up", "down"],
    # "mark the anomaly", "mark this tile": what is marked is always where you stand
    fillers=["node", "anomaly", "tile", "spot", "vulnerability"],
    # the rules' own words ("turn 90 degrees", "`mark`: declare the node") and the
    # spelling the rejection of `turnright` suggested
    also={
        Action.ROTATE_LEFT: ["TurnLeft", "turn 90 degrees left", "rotate 90 degrees left"],
        Action.ROTATE_RIGHT: ["TurnRight", "turn 90 degrees right", "rotate 90 degrees right"],
        Action.MARK: ["declare the node"],
    },
)


# Whole replies that are not commands but whose intent is clear enough to explain.
AMBIGUOUS = {
    "left": "'left' could mean a turn or a move: send 'rotate left' or 'west'.",
    "right": "'right' could mean a turn or a move: send 'rotate right' or 'east'.",
    "rotate": "say which way to rotate: 'rotate left' or 'rotate right'.",
    "turn": "say which way to turn: 'rotate left' or 'rotate right'.",
    "move": "say which way to move: 'north', 'south', 'east' or 'west'.",
}


def parse(text: str) -> Action:
    try:
        return GRAMMAR.parse(text)
    except ParseError as exc:
        hint = AMBIGUOUS.get(normalise(clean(text))) if isinstance(text, str) else None
        if hint is None or len(text) > 100:
            raise
        raise ParseError(hint, GRAMMAR.valid) from exc
