"""Reactive agents: each command a function of the current observation alone.

The scripted agents keep a map of what they have seen; a model shown one observation a
turn (`textenvs eval --history 0`) cannot imitate that. A reactive policy reads only the
observation in front of it, so every one of its decisions can be learned from one
observation, and how often it wins is what reading alone (no memory) can reach.

EM Anomaly (seeds 0-999: 23% won, against the scripted agent's 53-67% and 0.2-0.4% for
the best blind policy):

1. Mark when the field here reads 2 or 3 (a sure win).
2. Else climb: step to the orthogonal neighbour that reads most above here; else towards a
   diagonal tile that reads above here (through the free tile beside it, north/south
   first).
3. Else explore: go on in the facing direction; when the last move was blocked, turn
   right.

Exploring by bumping wastes steps (turning clockwise, before the wall, to the first free
side the scan shows wins 36%), but its cues are single words of the observation
(`Facing`, `BLOCKED`), where the other's is a tile of the 3x3 scan, which SmolLM2-135M did
not learn to read from a few thousand examples (`docs/training.md`).

Squad Recon (seeds 0-999: 66.7% won, against the scripted agent's 69.0%; every constant
order and cycle of 2-3 orders wins none of seeds 0-99): the scripted plan, made afresh
each turn, so it forgets the cells its squads stood on (`SquadReconReactive`).
"""

from __future__ import annotations

from typing import Any

from textenvs.agents.plays import not_played
from textenvs.agents.scripted import ScriptedPolicy
from textenvs.agents.scripted.squad_recon import SquadReconPolicy
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext

CLOCKWISE = ("north", "east", "south", "west")
#: a side's tile in the 3x3 scan (row, column), north at the top
SIDE = {"north": (0, 1), "east": (1, 2), "south": (2, 1), "west": (1, 0)}
#: a corner's tile in the scan and the two sides that lead to it
CORNERS = {
    (0, 0): ("north", "west"),
    (0, 2): ("north", "east"),
    (2, 0): ("south", "west"),
    (2, 2): ("south", "east"),
}


#: why the reactive agent chose a command (`em_anomaly_decision`)
MARK, CLIMB, STRAIGHT, TURN = "mark", "climb", "straight", "turn"


def em_anomaly(observation: dict[str, Any]) -> str:
    """The reactive EM Anomaly command for `observation` (the env's observation dict)."""
    return em_anomaly_decision(observation)[0]


def em_anomaly_decision(observation: dict[str, Any]) -> tuple[str, str]:
    """The reactive EM Anomaly command for `observation` and why: MARK, CLIMB (towards a
    higher reading), STRAIGHT (on in the facing direction) or TURN (away from a wall)."""
    view = observation["view"]
    here = view[1][1]
    if here >= 2:
        return "mark", MARK

    def reading(side: str) -> int | None:
        row, column = SIDE[side]
        value = view[row][column]
        return value if isinstance(value, int) else None

    free = [side for side in CLOCKWISE if reading(side) is not None]
    higher = [side for side in free if reading(side) > here]  # type: ignore[operator]
    if higher:
        return max(higher, key=lambda side: reading(side)), CLIMB  # type: ignore[arg-type]
    corners = [
        (value, sides)
        for (row, column), sides in CORNERS.items()
        if isinstance(value := view[row][column], int) and value > here
    ]
    if corners:
        _, sides = max(corners, key=lambda corner: corner[0])
        for side in sides:
            if side in free:
                return side, CLIMB
    facing = observation["facing"]
    if observation["last_result"].startswith("blocked"):
        return CLOCKWISE[(CLOCKWISE.index(facing) + 1) % 4], TURN
    return facing, STRAIGHT


class SquadReconReactive(SquadReconPolicy):
    """Squad Recon: the scripted plan (concentrate on a camp the squads can beat, explore
    apart otherwise), made from the current observation alone: it forgets the cells its
    squads stood on, so an explorer may be sent back to one whose sensor already swept."""

    remembers_visits = False


class EMAnomalyReactive(ScriptedPolicy):
    def choose(self, observation: dict[str, Any]) -> str:
        return em_anomaly(observation)


POLICIES: dict[str, type[ScriptedPolicy]] = {
    "em-anomaly": EMAnomalyReactive,
    "squad-recon": SquadReconReactive,
}


class ReactiveAgent(Agent):
    """The scenario's reactive policy; sees only `info["observation"]`, keeps nothing."""

    name = "reactive"

    def reset(self, context: EpisodeContext) -> None:
        if problem := not_played(self.name, POLICIES, context.env_name):
            raise ValueError(problem)
        super().reset(context)
        self._policy = POLICIES[context.env_name](context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        return Decision(self._policy.choose(info["observation"]))
