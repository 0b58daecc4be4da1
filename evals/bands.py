"""Reference bands: where a score sits between random play and the best known play.

Each scenario has a headline metric and a band measured by the project's own agents:
`random`, `scripted`, and the best known `ceiling` (exact, a bound, or an estimate); the
scenario says its headline and ceiling itself (`textenvs.core.scoring`). The bands ship
with the package in `bands.json`, which records the scenario versions and seeds they came
from. A scenario with difficulty levels has one band per level (`{"default_level": N,
"levels": {"0": band, ...}}`), and a result is read against the band of the level it
played (`band_for`). A band may also hold reference runs the scenario's scripted agents
define (Megacity's: the baseline policies and what the planner's victories need).
Regenerate them with one command (every scenario, or only the ones named; the
measuring is `measure_bands.py`, this module only reads them):

    python -m textenvs.evals.bands --seeds 0-999 [--env megacity,...] [--workers 2]

The normalised score of a result is `(agent - random) / (ceiling - random)` on the
headline metric, clipped to [0, 1]: 0 is random play or worse, 1 is the ceiling or
better (a small sample can land above an exact optimum by luck).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from textenvs.core.scoring import Headline
from textenvs.evals.skills import scoring_of

BANDS_FILE = Path(__file__).with_name("bands.json")


def headline(env: str) -> Headline:
    """The scenario's headline metric (its `core.scoring.Scoring`)."""
    return scoring_of(env).headline


def headline_value(env: str, summary: dict[str, Any]) -> float | None:
    """The headline metric of one per-env summary (None when it has no scored episode)."""
    field = headline(env).field
    if field.startswith("skills."):
        return (summary.get("skills") or {}).get(field.removeprefix("skills."))
    return summary.get(field) if summary.get("scored_episodes") else None


def episode_headline(env: str, record: dict[str, Any]) -> float | None:
    """One episode's contribution to the headline (a mean over episodes); None when the
    episode does not say (a skill field it lacks)."""
    field = headline(env).field
    if field.startswith("skills."):
        value = (record.get("skills") or {}).get(field.removeprefix("skills."))
        return None if value is None else float(value)
    if field == "success_rate":
        return float(bool(record["success"]))
    if field == "mean_return":
        return float(record["return"])
    raise ValueError(f"{env}: headline {field} is not a mean over episodes")


def normalised(value: float | None, band: dict[str, Any] | None) -> float | None:
    """`(value - random) / (ceiling - random)` clipped to [0, 1]; None without a band."""
    if value is None or not band or band["ceiling"] <= band["random"]:
        return None
    score = (value - band["random"]) / (band["ceiling"] - band["random"])
    return min(1.0, max(0.0, score))


def band_for(bands: dict[str, Any], env: str, level: int | None = None) -> dict[str, Any] | None:
    """The band a result of `env` at `level` is read against (None when there is none):
    the level's band for a scenario with levels (its default level when `level` is
    None), the one band otherwise."""
    entry = bands["scenarios"].get(env)
    if entry is None:
        return None
    if "levels" not in entry:
        return entry if level is None else None
    chosen = entry["default_level"] if level is None else level
    return entry["levels"].get(str(chosen))


def scenario_label(env: str, level: int | None) -> str:
    """`megacity (level 2)`: how reports name a scenario played at a level."""
    return env if level is None else f"{env} (level {level})"


def load_bands(path: Path = BANDS_FILE) -> dict[str, Any]:
    """`{"scenarios": {env: band}}` and the provenance; an empty set if the file is absent."""
    if not path.is_file():
        return {"scenarios": {}}
    return json.loads(path.read_text(encoding="utf-8"))


def band_warnings(
    bands: dict[str, Any],
    run_label: str,
    versions: dict[str, str],
    levels: dict[str, int | None] | None = None,
) -> list[str]:
    """One line per scenario (at the level the run played) without a band, or whose run
    version differs from the version of its band."""
    out = []
    for env, version in versions.items():
        name = scenario_label(env, (levels or {}).get(env))
        band = band_for(bands, env, (levels or {}).get(env))
        if band is None:
            out.append(f"{run_label}: no reference band for {name}")
        elif str(band["version"]) != str(version):
            out.append(
                f"{run_label}: {name} ran version {version}, its band was measured on version "
                f"{band['version']}; regenerate the bands before reading its normalised score"
            )
    return out


if __name__ == "__main__":  # the documented command; run as a script, not imported
    from textenvs.evals.measure_bands import main

    sys.exit(main())
