"""Small inline-SVG charts for the HTML report (no plotting library, no network).

Both charts are horizontal: one row per (group, series) so long scenario names fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#3366cc", "#dc7633", "#2e9e5b", "#8e44ad", "#c0392b", "#7f8c8d", "#b7950b")
WIDTH = 720
LABEL_W = 150  # left margin for group names
ROW_H = 16
GROUP_GAP = 10
TOP = 28
BOTTOM = 30


@dataclass
class Series:
    label: str
    color: str


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of non-empty `values`."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    t = start
    while True:  # up to the first tick at or above `hi`
        ticks.append(round(t, 10))
        if t >= hi - step * 1e-9:
            return ticks
        t += step


def _frame(
    title: str,
    groups: Sequence[str],
    n_series: int,
    ticks: list[float],
    fmt: str,
    width: int = WIDTH,
    label_w: int = LABEL_W,
) -> tuple[list[str], float, Callable[[float], float]]:
    plot_w = width - label_w - 20
    height = TOP + len(groups) * (n_series * ROW_H + GROUP_GAP) + BOTTOM
    lo, hi = ticks[0], ticks[-1]

    def x(value: float) -> float:
        return label_w + (value - lo) / (hi - lo) * plot_w

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{label_w}" y="16" class="t">{escape(title)}</text>',
    ]
    axis_y = height - BOTTOM + 4
    for t in ticks:
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{TOP - 4}" x2="{x(t):.1f}" y2="{axis_y}" class="g"/>'
            f'<text x="{x(t):.1f}" y="{axis_y + 14}" class="a" text-anchor="middle">'
            f"{format(t, fmt)}</text>"
        )
    for i, group in enumerate(groups):
        y = TOP + i * (n_series * ROW_H + GROUP_GAP) + n_series * ROW_H / 2 + 4
        parts.append(
            f'<text x="{label_w - 8}" y="{y:.1f}" class="l" text-anchor="end">'
            f"{escape(group)}</text>"
        )
    return parts, height, x


def _row_y(group: int, series: int, n_series: int) -> float:
    return TOP + group * (n_series * ROW_H + GROUP_GAP) + series * ROW_H


def success_chart(
    groups: Sequence[str],
    series: Sequence[Series],
    values: Sequence[Sequence[tuple[float, float, float] | None]],
) -> str:
    """Bars of success rate with 95% CI whiskers; `values[s][g] = (rate, lo, hi)`."""
    ticks = [0.0, 0.25, 0.5, 0.75, 1.0]
    parts, _, x = _frame("Success rate (95% Wilson CI)", groups, len(series), ticks, ".0%")
    for s, ser in enumerate(series):
        for g, value in enumerate(values[s]):
            if value is None:
                continue
            rate, lo, hi = value
            y = _row_y(g, s, len(series))
            mid = y + ROW_H / 2
            parts.append(
                f'<rect x="{LABEL_W}" y="{y + 2:.1f}" width="{x(rate) - LABEL_W:.1f}" '
                f'height="{ROW_H - 4}" fill="{ser.color}" opacity="0.8">'
                f"<title>{escape(ser.label)}: {rate:.1%} [{lo:.1%}, {hi:.1%}]</title></rect>"
                f'<line x1="{x(lo):.1f}" y1="{mid:.1f}" x2="{x(hi):.1f}" y2="{mid:.1f}" class="w"/>'
                f'<line x1="{x(lo):.1f}" y1="{mid - 4:.1f}" x2="{x(lo):.1f}" y2="{mid + 4:.1f}" '
                f'class="w"/><line x1="{x(hi):.1f}" y1="{mid - 4:.1f}" x2="{x(hi):.1f}" '
                f'y2="{mid + 4:.1f}" class="w"/>'
            )
    return "".join([*parts, _legend(series), "</svg>"])


def box_chart(
    title: str,
    groups: Sequence[str],
    series: Sequence[Series],
    values: Sequence[Sequence[Sequence[float]]],
    fmt: str = "g",
    width: int = WIDTH,
    label_w: int = LABEL_W,
) -> str:
    """Box plots (quartiles, whiskers to min/max, a mark at the mean) with every value
    drawn as a faint dot; `values[s][g]` is a list of numbers."""
    flat = [v for per_series in values for per_group in per_series for v in per_group]
    if not flat:
        flat = [0.0, 1.0]
    ticks = nice_ticks(min(flat), max(flat))
    parts, _, x = _frame(title, groups, len(series), ticks, fmt, width, label_w)
    for s, ser in enumerate(series):
        for g, data in enumerate(values[s]):
            if not data:
                continue
            y = _row_y(g, s, len(series))
            mid = y + ROW_H / 2
            q1, q2, q3 = (quantile(data, q) for q in (0.25, 0.5, 0.75))
            lo, hi, avg = min(data), max(data), sum(data) / len(data)
            tip = (
                f"{escape(ser.label)}: n={len(data)} min={lo:g} q1={q1:g} median={q2:g} "
                f"q3={q3:g} max={hi:g} mean={avg:.3g}"
            )
            parts.append(
                f'<line x1="{x(lo):.1f}" y1="{mid:.1f}" x2="{x(hi):.1f}" y2="{mid:.1f}" class="w"/>'
                f'<rect x="{x(q1):.1f}" y="{y + 2:.1f}" width="{max(x(q3) - x(q1), 1):.1f}" '
                f'height="{ROW_H - 4}" fill="{ser.color}" opacity="0.35" stroke="{ser.color}">'
                f"<title>{tip}</title></rect>"
                f'<line x1="{x(q2):.1f}" y1="{y + 2:.1f}" x2="{x(q2):.1f}" y2="{y + ROW_H - 2:.1f}"'
                f' stroke="{ser.color}" stroke-width="2"/>'
                f'<path d="M{x(avg):.1f},{mid - 3:.1f}l3,3l-3,3l-3,-3z" fill="#222"/>'
            )
            # Every value as a dot, spread vertically by a fixed pattern (no randomness).
            dots = "".join(
                f'<circle cx="{x(v):.1f}" cy="{y + 3 + (i * 7 % 11) * (ROW_H - 6) / 10:.1f}" '
                'r="1.5"/>'
                for i, v in enumerate(data[:2000])
            )
            parts.append(f'<g fill="{ser.color}" opacity="0.5">{dots}</g>')
    return "".join([*parts, _legend(series, width), "</svg>"])


def _legend(series: Sequence[Series], width: int = WIDTH) -> str:
    if len(series) < 2:
        return ""
    out, x = [], width - 20
    for ser in reversed(series):
        width = 14 + 7 * len(ser.label)
        x -= width
        out.append(
            f'<rect x="{x}" y="6" width="10" height="10" fill="{ser.color}"/>'
            f'<text x="{x + 14}" y="15" class="a">{escape(ser.label)}</text>'
        )
    return "".join(out)


SVG_CSS = """
svg .t{font:600 13px sans-serif;fill:#222}
svg .l{font:12px sans-serif;fill:#222}
svg .a{font:11px sans-serif;fill:#555}
svg .g{stroke:#e3e3e3;stroke-width:1}
svg .w{stroke:#222;stroke-width:1.2}
"""
