"""Treasure Hunt commands: text -> Action."""

from __future__ import annotations

from textenvs.core.phrases import PhraseGrammar
from textenvs.scenarios.treasure_hunt.state import Action


def _onto(direction: str) -> list[str]:
    return [f"step onto the tile to the {direction}", f"step onto the {direction} tile"]


GRAMMAR: PhraseGrammar[Action] = PhraseGrammar(
    {
        # and the rules' own words: "step onto the tile to the north", "reveal the tile
        # you stand on", "stay where you are"
        Action.NORTH: ["north", "n", "move north", "MoveNorth", "go north", "up", *_onto("north")],
        Action.SOUTH: [
            "south",
            "s",
            "move south",
            "MoveSouth",
            "go south",
            "down",
            *_onto("south"),
        ],
        Action.EAST: ["east", "e", "move east", "MoveEast", "go east", "right", *_onto("east")],
        Action.WEST: ["west", "w", "move west", "MoveWest", "go west", "left", *_onto("west")],
        Action.REVEAL: [
            "reveal",
            "r",
            "Reveal tile",
            "reveal the tile you stand on",
            "reveal the tile I stand on",
            "reveal the tile I am standing on",
        ],
        Action.WAIT: ["wait", "stay", "Wait", "stay where you are", "stay where I am"],
    },
    describe=lambda action: action.value,
    # "pick up", "on my left": orders in prose only after a verb ("go left").
    weak=["up", "down", "left", "right"],
    fillers=["tile", "square", "current"],
)


def parse(text: str) -> Action:
    return GRAMMAR.parse(text)
