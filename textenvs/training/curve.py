"""The training curve: one CSV row per optimizer step, and its charts (SVG and PDF);
beside it `rollouts.jsonl`, the commands and rewards of every episode of every step.

Each row describes the episodes played for that step (before its update): the reward
trained on, the return (the scenario's reward), success, the invalid-action rate, the
scenario's headline metric and normalised score as `textenvs report` reads them, its
skill metrics, and where the step's time went. A learner that raises its reward while
the headline metric stays flat is gaming the reward; the two sit side by side here for
that reason. An SFT run plays no episodes: its rows hold the step's loss (`SFT_COLUMNS`).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textenvs.evals import bands, plots, run_folder, skills
from textenvs.evals.line_chart import line_chart
from textenvs.evals.pdf import svg_to_pdf
from textenvs.evals.records import played_record
from textenvs.training.rollouts import Rollout, Timing

COLUMNS = [
    "step",
    "episodes",
    "reward",
    "return",
    "success_rate",
    "invalid_rate",
    "headline",
    "normalised_score",
    "turns",
    "reasks_per_turn",
    "cut_replies",
    "reply_tokens",
    "sequence_tokens",
    "loss",
    "grad_norm",
    "learning_rate",
    "step_s",
    "rollout_s",
    "generation_s",
    "env_s",
    "update_s",
]

#: an SFT run's row: the step's loss (and, weighted, its drift from the sampling model)
SFT_COLUMNS = ["step", "loss", "kl", "grad_norm", "learning_rate", "epoch", "step_s"]

#: what each step's episodes did, one JSON line per episode (beside the curve)
ROLLOUTS = "rollouts.jsonl"

#: (column, chart title) of the charts drawn; the headline's is the scenario's metric
CHARTS = [
    ("reward", "reward trained on"),
    ("return", "return"),
    ("headline", ""),
    ("invalid_rate", "invalid-action rate"),
    ("success_rate", "success rate"),
]


def row(
    *,
    step: int,
    env: str,
    level: int | None = None,
    rollouts: Sequence[Rollout],
    rewards: Sequence[float],
    logs: dict[str, Any],
    step_s: float,
    rollout_s: float,
    timing: Timing,
) -> dict[str, Any]:
    records = [played_record(r.result, r.skills) for r in rollouts]
    steps = sum(r.result.steps for r in rollouts)
    turns = sum(len(r.result.turns) for r in rollouts)
    headlines = [v for rec in records if (v := bands.episode_headline(env, rec)) is not None]
    headline = sum(headlines) / len(headlines) if headlines else None
    band = bands.band_for(bands.load_bands(), env, level)  # the band of the level trained on
    values: dict[str, Any] = {
        "step": step,
        "episodes": len(rollouts),
        "reward": _mean(list(rewards)),
        "return": _mean([r.reward for r in rollouts]),
        "success_rate": _mean([float(r.result.success) for r in rollouts]),
        "invalid_rate": sum(r.result.invalid_actions for r in rollouts) / steps if steps else None,
        "headline": headline,
        "normalised_score": bands.normalised(headline, band),
        "turns": turns / len(rollouts) if rollouts else None,
        "reasks_per_turn": sum(r.result.reasks for r in rollouts) / turns if turns else None,
        "cut_replies": sum(r.cut_replies for r in rollouts),
        "reply_tokens": _mean([float(sum(r.env_mask)) for r in rollouts]),
        "sequence_tokens": _mean(
            [float(len(r.prompt_ids) + len(r.completion_ids)) for r in rollouts]
        ),
        "loss": logs.get("loss"),
        "grad_norm": logs.get("grad_norm"),
        "learning_rate": logs.get("learning_rate"),
        "step_s": step_s,
        "rollout_s": rollout_s,
        "generation_s": timing.generation,
        "env_s": timing.environment,
        "update_s": max(0.0, step_s - rollout_s),
    }
    values |= {f"skill_{k}": v for k, v in skills.aggregate(env, records).items()}
    return values


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def append(out: Path, values: dict[str, Any], columns: Sequence[str] = COLUMNS) -> None:
    """Add a row to `out/curve.csv` (a header first in a new file: `columns`, then the
    row's other keys)."""
    path = out / run_folder.CURVE
    fields = [*columns, *sorted(k for k in values if k not in columns)]
    new = not path.exists()
    if not new:
        with path.open(newline="") as handle:
            fields = next(csv.reader(handle), fields)
    with path.open("a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow({k: _cell(values.get(k)) for k in fields})


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def read(out: Path) -> list[dict[str, float | None]]:
    path = out / run_folder.CURVE
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return [
            {k: float(v) if v not in ("", None) else None for k, v in line.items()}
            for line in csv.DictReader(handle)
        ]


def append_rollouts(out: Path, step: int, rollouts: Sequence[Rollout]) -> None:
    """Add the step's episodes to `out/rollouts.jsonl`: each one's seed, return, outcome,
    skills and, per turn, the command as the env read it (None: a reply it rejected) and
    the reward, so what a run's model did can be counted step by step."""
    with (out / ROLLOUTS).open("a") as handle:
        for rollout in rollouts:
            result = rollout.result
            line = {
                "step": step,
                "seed": result.seed,
                "return": result.total_reward,
                "success": result.success,
                "outcome": result.outcome,
                "skills": rollout.skills,
                "commands": [turn.read_as for turn in result.turns],
                "rewards": [turn.reward for turn in result.turns],
            }
            handle.write(json.dumps(line) + "\n")


def keep_until(out: Path, step: int) -> None:
    """Drop the rows and episodes after `step` (a run resumed from that checkpoint writes
    them again)."""
    path = out / run_folder.CURVE
    if path.exists():
        with path.open(newline="") as handle:
            lines = list(csv.reader(handle))
        kept = lines[:1] + [line for line in lines[1:] if line and float(line[0]) <= step]
        with path.open("w", newline="") as handle:
            csv.writer(handle).writerows(kept)
    logged = out / ROLLOUTS
    if logged.exists():
        with logged.open() as handle:
            records = [line for line in handle if json.loads(line)["step"] <= step]
        logged.write_text("".join(records))


def write_charts(out: Path, env: str, level: int | None = None) -> list[Path]:
    """The curve's charts as `out/figures/curve-<column>.svg` and `.pdf`: each step's
    figure and their running mean; the headline metric's under its name, with the band
    of `env` at `level` (the one the run trained on)."""
    rows = read(out)
    folder = out / run_folder.FIGURES
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for column, label in CHARTS:
        points = [(r["step"], r[column]) for r in rows if r.get(column) is not None]
        if not points:
            continue
        band = bands.band_for(bands.load_bands(), env, level) if column == "headline" else None
        label = label or bands.headline(env).label
        chart = line_chart(f"{env}: {label} by step", "step", points, y_label=label, band=band)
        svg = plots.standalone(chart)
        name = f"curve-{column.replace('_', '-')}"
        (folder / f"{name}.svg").write_text(svg)
        (folder / f"{name}.pdf").write_bytes(svg_to_pdf(svg))
        written += [folder / f"{name}.svg", folder / f"{name}.pdf"]
    return written
