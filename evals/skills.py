"""Skill metrics: per-episode figures that carry signal where success cannot.

`measure(env, seed, episode)` reads one played episode (the trajectory form: `turns`
with their `events`, and `final_info_observation`, the data form of the last
observation) and returns a flat `{name: number | bool | None}`; None means the episode
does not say (an old record, a redesigned scenario without that field). `aggregate`
turns a scenario's per-episode values into the figures a report shows.

- treasure-hunt: new tiles stepped onto, exploration share (new tiles / steps), and the
  expected success of that exploration (`treasure_curve`);
- em-anomaly: where the Mark landed: on target, two steps away, further, or no Mark;
- squad-recon: camps taken, and whether the seed is winnable at all (from its strengths);
- megacity: districts standing at the end, steps in violation of a threshold;
- magnetic-field: characters right at the end.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

Skills = dict[str, Any]
Episode = dict[str, Any]

# ----- Treasure Hunt -------------------------------------------------------------------

HIDDEN_TILES = 63  # every tile but the start
TRAPS = 10
TREASURE_STEPS = 30


@functools.cache
def treasure_curve(tiles: int = HIDDEN_TILES, traps: int = TRAPS) -> tuple[float, ...]:
    """`curve[n]`: the chance of winning for play that steps onto n new tiles.

    Nothing is known about a tile before stepping on it, so whatever order a player
    chooses, the new tiles it reaches are a uniform random draw of the hidden ones. It
    wins when the Bomb comes up before every Flower within the first n: the sum over i
    of P(the first i - 1 new tiles are Empty) x P(the i-th is the Bomb).
    """
    empty = tiles - traps - 1
    curve, all_empty, total = [0.0], 1.0, 0.0
    for i in range(1, tiles + 1):
        total += all_empty / (tiles - i + 1)
        curve.append(total)
        all_empty *= max(0, empty - (i - 1)) / (tiles - i + 1)
    return tuple(curve)


def expected_treasure_success(new_tiles: float) -> float:
    """`treasure_curve` at a fractional tile count (linear between whole counts)."""
    curve = treasure_curve()
    n = min(max(new_tiles, 0.0), float(HIDDEN_TILES))
    lo = math.floor(n)
    hi = min(lo + 1, HIDDEN_TILES)
    return curve[lo] + (curve[hi] - curve[lo]) * (n - lo)


TREASURE_OPTIMUM = expected_treasure_success(TREASURE_STEPS)


def _treasure(seed: int | None, episode: Episode) -> Skills:
    turns = episode.get("turns") or []
    steps = len(turns)
    new = sum(
        1
        for turn in turns
        for e in turn.get("events", [])
        if e.get("type") == "reveal" and not e.get("own")
    )
    share = new / steps if steps else None
    # An episode cut short by the Bomb or a Flower would have gone on exploring at the
    # same rate: extend it by its unused steps so the figure measures the exploration,
    # not where the Bomb happened to lie.
    left = (episode.get("final_info_observation") or {}).get("steps_left", 0)
    reach = new + (left * share if share and episode.get("outcome") != "timeout" else 0)
    return {
        "new_tiles": new,
        "exploration": share,
        "expected_success": expected_treasure_success(reach) if steps else None,
    }


# ----- EM Anomaly ----------------------------------------------------------------------

MARK_KINDS = ("on_target", "near", "far")


def _em_anomaly(seed: int | None, episode: Episode) -> Skills:
    """How the Mark landed, read from the reading on the marked tile: 2 or 3 is within
    one step of the node (a win), 1 is exactly two steps away, 0 is further (or behind
    a wall)."""
    final = episode.get("final_info_observation") or {}
    if final.get("last_action") != "mark":
        return {"mark": None}
    view = final.get("view") or [[None] * 3] * 3
    reading = view[1][1]
    if not isinstance(reading, int):
        return {"mark": None}
    return {"mark": "on_target" if reading >= 2 else "near" if reading == 1 else "far"}


# ----- Squad Recon ---------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def squad_recon_ceiling(seed: int) -> float:
    """The most a seed can pay, from its hidden strengths: 1.0 when all squads together
    outfight the stronger camp (take the weaker first: a won attack costs nothing), 0.5
    when they outfight only the weaker one, else 0. Walking time is not counted."""
    import textenvs

    env = textenvs.make("squad-recon")
    env.reset(seed=seed)
    state = env._state  # a seed's fact for scoring, never shown to an agent
    total = sum(s.strength for s in state.squads)
    camps = sorted(c.strength for c in state.camps)
    return 0.5 * sum(total > c for c in camps)


def _squad_recon(seed: int | None, episode: Episode) -> Skills:
    taken = sum(
        1
        for turn in episode.get("turns") or []
        for e in turn.get("events", [])
        if e.get("type") == "camp_eliminated"
    )
    winnable = None if seed is None else squad_recon_ceiling(seed) == 1.0
    return {"camps_taken": taken, "winnable": winnable}


# ----- Megacity ------------------------------------------------------------------------

VIOLATION_TERMS = ("integrity_low", "air_low")


def _megacity(seed: int | None, episode: Episode) -> Skills:
    """Districts from the last observation (a count, or a list of districts); a step
    is in violation when its reward names a threshold penalty or an event says so."""
    final = episode.get("final_info_observation") or {}
    districts = final.get("districts")
    if isinstance(districts, list):
        districts = len(districts)
    violations, reported = 0, False
    for turn in episode.get("turns") or []:
        hit = False
        for e in turn.get("events", []):
            if e.get("type") == "reward":
                reported = True
                hit |= any(term in (e.get("terms") or {}) for term in VIOLATION_TERMS)
            elif e.get("type") == "violation":
                reported = hit = True
        violations += hit
    return {
        "districts": districts if isinstance(districts, int) else None,
        "violation_steps": violations if reported else None,
    }


# ----- Magnetic Field ------------------------------------------------------------------


def _magnetic_field(seed: int | None, episode: Episode) -> Skills:
    for turn in reversed(episode.get("turns") or []):
        for e in turn.get("events", []):
            if e.get("type") == "evaluated" and isinstance(e.get("correct"), int):
                return {"chars_correct": e["correct"]}
    return {"chars_correct": None}


MEASURES: dict[str, Callable[[int | None, Episode], Skills]] = {
    "treasure-hunt": _treasure,
    "em-anomaly": _em_anomaly,
    "squad-recon": _squad_recon,
    "megacity": _megacity,
    "magnetic-field": _magnetic_field,
}


def measure(env: str, seed: int | None, episode: Episode) -> Skills:
    """The skill fields of one episode ({} for a scenario without any)."""
    fn = MEASURES.get(env)
    return fn(seed, episode) if fn else {}


# ----- aggregation ---------------------------------------------------------------------


def _values(records: Sequence[dict[str, Any]], field: str) -> list[Any]:
    return [v for r in records if (v := (r.get("skills") or {}).get(field)) is not None]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aggregate(env: str, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A scenario's skill figures over scored episode records (None where no episode
    says). Keys are stable: they name CSV columns."""
    if env == "treasure-hunt":
        return {
            "exploration": _mean(_values(records, "exploration")),
            "expected_success": _mean(_values(records, "expected_success")),
        }
    if env == "em-anomaly":
        marks = [(r.get("skills") or {}).get("mark", "?") for r in records]
        known = [m for m in marks if m != "?"]
        counts = {kind: known.count(kind) for kind in MARK_KINDS}
        return {f"marks_{k}": v if known else None for k, v in counts.items()} | {
            "no_mark": known.count(None) if known else None
        }
    if env == "squad-recon":
        winnable = [r for r in records if (r.get("skills") or {}).get("winnable")]
        won = sum(1 for r in winnable if r["success"])
        return {
            "winnable_seeds": len(winnable) if _values(records, "winnable") else None,
            "success_on_winnable": won / len(winnable) if winnable else None,
            "camps_taken": _mean(_values(records, "camps_taken")),
        }
    if env == "megacity":
        return {
            "districts_at_end": _mean(_values(records, "districts")),
            "violation_steps": _mean(_values(records, "violation_steps")),
        }
    if env == "magnetic-field":
        return {"chars_correct": _mean(_values(records, "chars_correct"))}
    return {}


# What each aggregate figure is, for tables and the CSV header.
LABELS = {
    "exploration": ("exploration (new tiles / steps)", "share"),
    "expected_success": ("expected success of the exploration", "share"),
    "marks_on_target": ("marks on target", "count"),
    "marks_near": ("marks 2 steps away", "count"),
    "marks_far": ("marks further away", "count"),
    "no_mark": ("episodes without a mark", "count"),
    "winnable_seeds": ("winnable seeds", "count"),
    "success_on_winnable": ("success on winnable seeds", "share"),
    "camps_taken": ("camps taken per episode", "mean"),
    "districts_at_end": ("districts standing at the end", "mean"),
    "violation_steps": ("steps in violation per episode", "mean"),
    "chars_correct": ("characters right per episode", "mean"),
}


def format_value(field: str, value: Any) -> str:
    if value is None:
        return "n/a"
    kind = LABELS.get(field, ("", "mean"))[1]
    if kind == "share":
        return f"{value:.1%}"
    if kind == "count":
        return str(value)
    return f"{value:.2f}"
