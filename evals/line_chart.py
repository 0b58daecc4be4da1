"""The line chart of a value by step (the training curve), drawn as the report's charts
are: labelled series, the scenario's band, an axis that shows the change."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from textenvs.evals.plots import PALETTE, WIDTH, Series, legend, nice_ticks, tick_format


def line_chart(
    title: str,
    x_label: str,
    points: Sequence[tuple[float, float]],
    *,
    y_label: str,
    band: dict[str, Any] | None = None,
    smooth: int = 5,
    width: int = WIDTH,
    height: int = 240,
) -> str:
    """A value by step (e.g. a training curve): each point, the mean of the last `smooth`
    points as a line (one step's batch is noisy), both named in a legend, and the
    scenario's `band` (random, scripted, ceiling) as labelled lines. The axis spans the
    points and the band, not 0: a change of 0.084 -> 0.091 must show."""
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    marks = [(key, band[key]) for key in ("random", "scripted", "ceiling")] if band else []
    span = ys + [value for _, value in marks]
    ticks = nice_ticks(min(span), max(span) if max(span) > min(span) else min(span) + 1)
    x_lo, x_hi = min(xs), max(xs)
    y_lo, y_hi = ticks[0], ticks[-1]
    left, right, top, bottom = 54, 14, 26, 34
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(value: float) -> float:
        return left + (value - x_lo) / ((x_hi - x_lo) or 1) * plot_w

    def y(value: float) -> float:
        return top + (1 - (value - y_lo) / ((y_hi - y_lo) or 1)) * plot_h

    fmt = tick_format(ticks)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" class="t">{escape(title)}</text>',
    ]
    for t in ticks:
        parts.append(
            f'<line x1="{left}" y1="{y(t):.1f}" x2="{width - right}" y2="{y(t):.1f}" class="g"/>'
            f'<text x="{left - 4}" y="{y(t) + 4:.1f}" class="a" text-anchor="end">'
            f"{t:{fmt}}</text>"
        )
    placed: list[tuple[float, float]] = []  # (y, left end) of the band labels so far
    for key, value in marks:  # labelled above the line, inside the plot: never cut off
        dashed = ' stroke-dasharray="3,2"' if key == "scripted" else ""
        label = f"{key} {value:.3g}"
        end = width - right - 4
        for other_y, other_start in placed:  # lines close together: labels side by side
            if abs(other_y - y(value)) < 12:
                end = min(end, other_start - 10)
        placed.append((y(value), end - 6 * len(label)))
        parts.append(
            f'<line x1="{left}" y1="{y(value):.1f}" x2="{width - right}" y2="{y(value):.1f}" '
            f'class="w"{dashed}/>'
            f'<text x="{end}" y="{y(value) - 3:.1f}" class="a" text-anchor="end">{label}</text>'
        )
    for t in nice_ticks(x_lo, x_hi, 8):
        if x_lo <= t <= x_hi:
            parts.append(
                f'<text x="{x(t):.1f}" y="{top + plot_h + 14}" class="a" '
                f'text-anchor="middle">{t:g}</text>'
            )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" class="a" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text transform="translate(12 {top + plot_h / 2:.1f}) rotate(-90)" class="a" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    for px, py in points:
        parts.append(
            f'<circle cx="{x(px):.1f}" cy="{y(py):.1f}" r="2.5" fill="{PALETTE[0]}" '
            f'fill-opacity="0.45"><title>{px:g}: {py:.4g}</title></circle>'
        )
    means = [
        (px, sum(ys[max(0, i - smooth + 1) : i + 1]) / len(ys[max(0, i - smooth + 1) : i + 1]))
        for i, px in enumerate(xs)
    ]
    line = " ".join(f"{x(px):.1f},{y(py):.1f}" for px, py in means)
    parts.append(f'<polyline points="{line}" fill="none" stroke="{PALETTE[1]}" stroke-width="2"/>')
    named = [Series(f"each {x_label}", PALETTE[0]), Series(f"last {smooth} mean", PALETTE[1])]
    return "".join([*parts, legend(named, width), "</svg>"])
