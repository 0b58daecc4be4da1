"""Megacity's page: its published reference runs per level, as tables (from the bands;
`textenvs.agents.scripted.megacity_reference` measures them)."""

from __future__ import annotations

import textwrap
from typing import Any

from textenvs.agents.scripted.megacity_reference import NEEDS, POLICIES
from textenvs.evals.metrics import wilson

POLICY_LABELS = {"scripted": "planner (`scripted`)", "random": "random"}


def tables(bands: dict[str, Any]) -> str:
    """Markdown tables of Megacity's published reference runs per level (victories,
    mean returns, and what the planner's victories need), as its scenario page shows
    them."""
    entry = bands["scenarios"]["megacity"]
    levels = sorted(entry["levels"].items(), key=lambda item: int(item[0]))
    head = "| policy | " + " | ".join(f"level {k}" for k, _band in levels) + " |"
    rule = "|---|" + "---|" * len(levels)

    def rate(wins: int, n: int) -> str:
        return f"{wins} / {n} ({100 * wins / n:.1f}%)"

    wins, returns = [head, rule], [head, rule]
    for name in ("scripted", "random", *POLICIES):
        label = POLICY_LABELS.get(name, name)
        cells_w, cells_r = [], []
        for _k, band in levels:
            n = band["episodes"]
            if name in ("scripted", "random"):
                cells_w.append(rate(round(band["success_rate"][name] * n), n))
                cells_r.append(f"{band['mean_return'][name]:.1f}")
            else:
                policy = band["policies"][name]
                cells_w.append(rate(policy["victories"], n))
                cells_r.append(f"{policy['mean_return']:.1f}")
        wins.append(f"| {label} | " + " | ".join(cells_w) + " |")
        returns.append(f"| {label} | " + " | ".join(cells_r) + " |")
    needs = [head.replace("| policy |", "| taken away |"), rule]
    for mechanism in NEEDS:
        cells = []
        for _k, band in levels:
            need = band["needs"][mechanism]
            cells.append(
                f"{need['victories_lost']} of {band['planner_victories']} "
                f"({100 * need['share']:.1f}%)"
            )
        needs.append(f"| {mechanism} | " + " | ".join(cells) + " |")
    intervals = []
    for k, band in levels:
        n = band["episodes"]
        low, high = wilson(round(band["success_rate"]["scripted"] * n), n)
        intervals.append(f"level {k} {100 * low:.1f}-{100 * high:.1f}%")
    seeds = {band["seeds"] for _k, band in levels}
    return "\n".join(
        [
            f"Victories (seeds {', '.join(sorted(seeds))}, one episode per seed and level):",
            "",
            *wins,
            "",
            textwrap.fill(
                "The planner's success rate, 95% Wilson intervals: " + ", ".join(intervals) + ".",
                width=88,
            ),
            "",
            "Mean return:",
            "",
            *returns,
            "",
            "Victories of the planner lost when one mechanism is taken away (share of its "
            "victories at that level):",
            "",
            *needs,
        ]
    )
