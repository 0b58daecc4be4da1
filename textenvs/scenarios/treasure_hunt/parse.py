"""Treasure Hunt commands: text -> Action."""

from __future__ import annotations

from textenvs.core.phrases import PhraseGrammar
from textenvs.scenarios.treasure_hunt.state import MOVES, Action

GRAMMAR: PhraseGrammar[Action] = PhraseGrammar(
    {
        Action.NORTH: ["north", "n", "move north", "MoveNorth", "go north", "up"],
        Action.SOUTH: ["south", "s", "move south", "MoveSouth", "go south", "down"],
        Action.EAST: ["east", "e", "move east", "MoveEast", "go east", "right"],
        Action.WEST: ["west", "w", "move west", "MoveWest", "go west", "left"],
        Action.REVEAL: ["reveal", "r", "Reveal tile"],
        Action.WAIT: ["wait", "stay", "Wait"],
    },
    describe=lambda action: action.value,
    # "pick up", "on my left": orders in prose only after a verb ("go left").
    weak=["up", "down", "left", "right"],
    fillers=["tile", "square", "current"],
    # the rules' own words: "step onto the tile to the north", "reveal the tile you stand
    # on", "stay where you are"
    also={
        **{
            move: [f"step onto the tile to the {move.value}", f"step onto the {move.value} tile"]
            for move in MOVES
        },
        Action.REVEAL: ["reveal the tile you stand on", "reveal the tile I stand on"],
        Action.WAIT: ["stay where you are", "stay where I am"],
    },
)


def parse(text: str) -> Action:
    return GRAMMAR.parse(text)
