"""Reference bands: where a score sits between random play and the best known play.

Each scenario has a headline metric (`HEADLINES`) and a band measured by the project's
own agents: `random`, `scripted`, and the best known `ceiling` (exact, a bound, or an
estimate; see `textenvs.evals.ceilings`). The bands ship with the package in
`bands.json`, which records the scenario versions and seeds they came from.
Regenerate them with one command (every scenario, or only the ones named):

    python -m textenvs.evals.bands --seeds 0-999 [--env megacity,...]

The normalised score of a result is `(agent - random) / (ceiling - random)` on the
headline metric, clipped to [0, 1]: 0 is random play or worse, 1 is the ceiling or
better (a small sample can land above an exact optimum by luck).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BANDS_FILE = Path(__file__).with_name("bands.json")


@dataclass(frozen=True)
class Headline:
    field: str  # a summary key, or "skills.<name>"
    label: str


HEADLINES: dict[str, Headline] = {
    # Success alone spans 6-9% and needs ~1,200 episodes per agent to separate random
    # from perfect play; the expected success of the exploration carries the same
    # meaning without the luck of where the Bomb lies.
    "treasure-hunt": Headline("skills.expected_success", "expected success of the exploration"),
    "magnetic-field": Headline("mean_return", "mean score (0.25 per right character)"),
    "em-anomaly": Headline("success_rate", "success rate"),
    "squad-recon": Headline("success_rate", "success rate (both camps)"),
    "megacity": Headline("success_rate", "success rate"),
}
DEFAULT_HEADLINE = Headline("success_rate", "success rate")


def headline(env: str) -> Headline:
    return HEADLINES.get(env, DEFAULT_HEADLINE)


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


def load_bands(path: Path = BANDS_FILE) -> dict[str, Any]:
    """`{"scenarios": {env: band}}` and the provenance; an empty set if the file is absent."""
    if not path.is_file():
        return {"scenarios": {}}
    return json.loads(path.read_text(encoding="utf-8"))


def version_warnings(bands: dict[str, Any], run_label: str, versions: dict[str, str]) -> list[str]:
    """One line per scenario whose run version differs from the version of its band."""
    out = []
    for env, version in versions.items():
        band = bands["scenarios"].get(env)
        if band is not None and str(band["version"]) != str(version):
            out.append(
                f"{run_label}: {env} ran version {version}, its band was measured on version "
                f"{band['version']}; regenerate the bands before reading its normalised score"
            )
    return out


# ----- measuring ---------------------------------------------------------------------


def play_many(env: str, agent: str, seeds: Sequence[int]) -> dict[str, Any]:
    """Play one episode per seed in this process; the per-env summary with skills."""
    import textenvs
    from textenvs.agents import make_agent
    from textenvs.evals.episode import run_episode
    from textenvs.evals.metrics import summarize
    from textenvs.evals.runner import episode_record

    instance = textenvs.make(env)
    records = []
    for seed in seeds:
        result = asyncio.run(run_episode(instance, make_agent(agent), seed))
        records.append(episode_record(result, (env, seed, 0), None, ""))
    return summarize(records)


def ceiling_for(env: str, seeds: Sequence[int], scripted: float) -> tuple[float, str, str]:
    from textenvs.evals import ceilings

    special: dict[str, Callable[[Sequence[int]], tuple[float, str, str]]] = {
        "treasure-hunt": ceilings.treasure_hunt,
        "squad-recon": ceilings.squad_recon,
        "em-anomaly": ceilings.em_anomaly,
    }
    if env in special:
        return special[env](seeds)
    return ceilings.reached_by_scripted(env, scripted)


def measure_band(env: str, seeds: Sequence[int], seeds_spec: str) -> dict[str, Any]:
    import textenvs

    started = time.perf_counter()
    runs = {agent: play_many(env, agent, seeds) for agent in ("random", "scripted")}
    values = {agent: headline_value(env, s) or 0.0 for agent, s in runs.items()}
    ceiling, kind, method = ceiling_for(env, seeds, values["scripted"])
    return {
        "version": textenvs.get(env).load().version,
        "seeds": seeds_spec,
        "episodes": len(seeds),
        "metric": headline(env).field,
        "metric_label": headline(env).label,
        "random": values["random"],
        "scripted": values["scripted"],
        "ceiling": ceiling,
        "ceiling_kind": kind,
        "ceiling_method": method,
        "success_rate": {a: s["success_rate"] for a, s in runs.items()},
        "mean_return": {a: s["mean_return"] for a, s in runs.items()},
        "skills": {a: s["skills"] for a, s in runs.items()},
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    import textenvs
    from textenvs.evals.runner import parse_seeds, resolve_envs

    parser = argparse.ArgumentParser(
        prog="python -m textenvs.evals.bands",
        description="Measure the reference bands (random, scripted, ceiling) with the "
        "project's own agents and write them to the package's bands.json. Scenarios not "
        "named with --env keep their stored band.",
    )
    parser.add_argument("--seeds", default="0-999", help="seed range (default 0-999)")
    parser.add_argument("--env", default="all", help="scenarios to measure (default all)")
    parser.add_argument("--out", type=Path, default=BANDS_FILE, help="file to write")
    args = parser.parse_args(argv)
    try:
        seeds = parse_seeds(args.seeds)
        envs = resolve_envs(args.env)
    except (ValueError, KeyError) as exc:
        print(f"bands: error: {exc}", file=sys.stderr)
        return 2
    data = load_bands(args.out)
    for env in envs:
        print(f"{env}: {len(seeds)} seeds ...", file=sys.stderr, flush=True)
        data["scenarios"][env] = band = measure_band(env, seeds, args.seeds)
        print(
            f"{env}: random {band['random']:.4f}, scripted {band['scripted']:.4f}, "
            f"ceiling {band['ceiling']:.4f} ({band['ceiling_kind']}), {band['seconds']} s",
            file=sys.stderr,
        )
    data["scenarios"] = dict(sorted(data["scenarios"].items()))
    data["textenvs_version"] = textenvs.__version__
    data["generated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    data["command"] = "python -m textenvs.evals.bands " + " ".join(argv or sys.argv[1:])
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
