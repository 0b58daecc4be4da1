"""Small SVG charts for the report: inline in the HTML page, and as files (`figures`).

Success rates with their CIs, each scenario's headline result against its reference
band, and histograms of returns and steps (box plots say little about 0/1 outcomes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

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
                + _whisker(x(lo), x(hi), mid)
            )
    return "".join([*parts, legend(series), "</svg>"])


def band_chart(
    title: str,
    band: dict[str, Any] | None,
    series: Sequence[Series],
    values: Sequence[tuple[float, float, float] | None],
    width: int = 540,
) -> str:
    """One scenario's headline result against its reference band: the band (random to
    ceiling) shaded behind, a mark at the scripted agent, a bar (with its 95% CI when
    `lo < hi`) per run; `values[s] = (value, lo, hi)` or None. Own scale per scenario."""
    label_w = 110
    top = max([v[2] for v in values if v is not None] + [band["ceiling"] if band else 0.0])
    ticks = nice_ticks(0.0, top if top > 0 else 1.0)
    rows = ["", *[ser.label for ser in series]]
    parts, _, x = _frame(title, [""], len(rows), ticks, tick_format(ticks), width, label_w)
    y0 = TOP
    if band:
        # shaded and marked below the first row, which names the band in words: the
        # words never cross a mark
        lo, hi = x(band["random"]), x(band["ceiling"])
        below = y0 + ROW_H
        parts.append(
            f'<rect x="{lo:.1f}" y="{below:.1f}" width="{max(hi - lo, 1):.1f}" '
            f'height="{(len(rows) - 1) * ROW_H:.1f}" fill="#e8e8e8">'
            f"<title>band: random {band['random']:.3g} .. ceiling {band['ceiling']:.3g}"
            "</title></rect>"
        )
        for key in ("random", "scripted", "ceiling"):
            bx = x(band[key])
            parts.append(
                f'<line x1="{bx:.1f}" y1="{below:.1f}" x2="{bx:.1f}" '
                f'y2="{y0 + len(rows) * ROW_H:.1f}" class="w"'
                + (' stroke-dasharray="3,2"/>' if key == "scripted" else "/>")
            )
        # The first row names the band in words: marks that sit close cannot carry labels.
        kind = band.get("ceiling_kind", "")
        parts.append(
            f'<text x="{label_w - 8}" y="{y0 + 12:.1f}" class="a" text-anchor="end">band</text>'
            f'<text x="{label_w + 4}" y="{y0 + 12:.1f}" class="a">random {band["random"]:.3g}'
            f" · scripted {band['scripted']:.3g} (dashed) · ceiling {band['ceiling']:.3g}"
            f"{f' ({kind})' if kind else ''}</text>"
        )
    for s, ser in enumerate(series):
        y = y0 + (s + 1) * ROW_H
        mid = y + ROW_H / 2
        parts.append(
            f'<text x="{label_w - 8}" y="{mid + 4:.1f}" class="l" text-anchor="end">'
            f"{escape(ser.label)}</text>"
        )
        value = values[s]
        if value is None:
            parts.append(f'<text x="{label_w + 4}" y="{mid + 4:.1f}" class="a">n/a</text>')
            continue
        v, lo, hi = value
        parts.append(
            f'<rect x="{label_w}" y="{y + 3:.1f}" width="{max(x(v) - label_w, 1):.1f}" '
            f'height="{ROW_H - 6}" fill="{ser.color}" opacity="0.85">'
            f"<title>{escape(ser.label)}: {v:.3g}</title></rect>"
        )
        if hi > lo:
            parts.append(_whisker(x(lo), x(hi), mid))
    return "".join([*parts, "</svg>"])


def learning_chart(
    title: str,
    series: Sequence[Series],
    curves: Sequence[Sequence[tuple[int, float, float, float]] | None],
    width: int = WIDTH,
    height: int = 200,
) -> str:
    """Success (0-1) by trial index, a line per series with 95% CI whiskers;
    `curves[s]` = [(trial, rate, lo, hi), ...] or None. Series side by side a little."""
    trials = max((p[0] for c in curves if c for p in c), default=1)
    left, right, top, bottom = 44, 14, 26, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    spread = min(8.0, plot_w / max(1, trials) / (2 * max(1, len(series))))

    def x(trial: float, s: int) -> float:
        centre = left + (trial - 0.5) / trials * plot_w
        return centre + (s - (len(series) - 1) / 2) * spread

    def y(rate: float) -> float:
        return top + (1 - rate) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" class="t">{escape(title)}</text>',
    ]
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{left}" y1="{y(t):.1f}" x2="{width - right}" y2="{y(t):.1f}" class="g"/>'
            f'<text x="{left - 4}" y="{y(t) + 4:.1f}" class="a" text-anchor="end">{t:.0%}</text>'
        )
    every = max(1, math.ceil(trials / 12))
    for trial in range(1, trials + 1, every):
        parts.append(
            f'<text x="{x(trial, (len(series) - 1) / 2):.1f}" y="{top + plot_h + 14}" '
            f'class="a" text-anchor="middle">{trial}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" class="a" '
        'text-anchor="middle">trial</text>'
    )
    for s, (ser, points) in enumerate(zip(series, curves, strict=True)):
        if not points:
            continue
        line = " ".join(f"{x(t, s):.1f},{y(rate):.1f}" for t, rate, _lo, _hi in points)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{ser.color}" '
                     'stroke-width="2"/>')  # fmt: skip
        for t, rate, lo, hi in points:
            cx = x(t, s)
            parts.append(
                f'<line x1="{cx:.1f}" y1="{y(lo):.1f}" x2="{cx:.1f}" y2="{y(hi):.1f}" '
                f'stroke="{ser.color}"/><circle cx="{cx:.1f}" cy="{y(rate):.1f}" r="3" '
                f'fill="{ser.color}"><title>{escape(ser.label)} trial {t}: {rate:.1%} '
                f"[{lo:.1%}, {hi:.1%}]</title></circle>"
            )
    return "".join([*parts, legend(series, width), "</svg>"])


def _whisker(lo: float, hi: float, mid: float) -> str:
    return (
        f'<line x1="{lo:.1f}" y1="{mid:.1f}" x2="{hi:.1f}" y2="{mid:.1f}" class="w"/>'
        f'<line x1="{lo:.1f}" y1="{mid - 4:.1f}" x2="{lo:.1f}" y2="{mid + 4:.1f}" class="w"/>'
        f'<line x1="{hi:.1f}" y1="{mid - 4:.1f}" x2="{hi:.1f}" y2="{mid + 4:.1f}" class="w"/>'
    )


def tick_format(ticks: Sequence[float]) -> str:
    """Enough decimals to tell the ticks apart, no more."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    return f".{decimals}f"


def histogram(
    title: str,
    series: Sequence[Series],
    values: Sequence[Sequence[float]],
    width: int = 540,
    height: int = 150,
) -> str:
    """Counts per bin, one bar per series side by side in each bin. Whole-number data
    gets whole-number bins (so 40 and 41 never share an axis with 40.2)."""
    flat = [v for vs in values for v in vs]
    lo, hi = (min(flat), max(flat)) if flat else (0.0, 1.0)
    whole = all(float(v).is_integer() for v in flat)
    if whole:
        size = max(1, math.ceil((hi - lo + 1) / 20))
        edges = [lo + i * size for i in range(int((hi - lo) // size) + 2)]
    else:
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
        size = nice_ticks(lo, hi, 12)
        edges = size if len(size) > 2 else [lo, hi]
    bins = len(edges) - 1
    counts = [[0] * bins for _ in series]
    for s, vs in enumerate(values):
        for v in vs:
            i = min(bins - 1, max(0, int((v - edges[0]) // (edges[1] - edges[0]))))
            counts[s][i] += 1
    peak = max([c for row in counts for c in row] + [1])
    left, bottom, top = 40, 34, 26
    plot_w, plot_h = width - left - 14, height - top - bottom
    bin_w = plot_w / bins
    bar_w = max(1.0, (bin_w - 2) / max(1, len(series)))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" class="t">{escape(title)}</text>',
    ]
    base = top + plot_h
    for t in nice_ticks(0, peak, 3):
        if t > peak:
            break
        y = base - t / peak * plot_h
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{width - 14}" y2="{y:.1f}" class="g"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" class="a" text-anchor="end">{t:g}</text>'
        )
    labels = [_bin_label(edges[i], edges[i + 1], whole) for i in range(bins)]
    # Thin the labels to about 10 and so that they do not overlap (~6 px a character),
    # always keeping the last bin's.
    widest = max(len(label) for label in labels) * 6 + 8
    every = max(1, math.ceil(bins / 10), math.ceil(widest / bin_w))
    shown = {i for i in range(bins) if i % every == 0 and bins - 1 - i >= every} | {bins - 1}
    for i in range(bins):
        bx = left + i * bin_w
        if i in shown:
            parts.append(
                f'<text x="{bx + bin_w / 2:.1f}" y="{base + 14}" class="a" '
                f'text-anchor="middle">{labels[i]}</text>'
            )
        for s, ser in enumerate(series):
            c = counts[s][i]
            if c:
                h = c / peak * plot_h
                parts.append(
                    f'<rect x="{bx + 1 + s * bar_w:.1f}" y="{base - h:.1f}" width="{bar_w:.1f}"'
                    f' height="{h:.1f}" fill="{ser.color}" opacity="0.85"><title>'
                    f"{escape(ser.label)}: {c} in {labels[i]}</title></rect>"
                )
    parts.append(f'<line x1="{left}" y1="{base}" x2="{width - 14}" y2="{base}" class="w"/>')
    return "".join([*parts, legend(series, width), "</svg>"])


def _bin_label(lo: float, hi: float, whole: bool) -> str:
    """A bin as the range it holds: whole-number bins hold lo..hi-1 (both shown, or one
    number for a bin of one), other bins lo to hi."""
    low, high = (lo, hi - 1) if whole else (lo, hi)
    if whole and hi - lo == 1:
        return f"{lo:g}"
    # a dash between negative numbers reads as one more minus: -900 to -800, not -900–-800
    return f"{low:g} to {high:g}" if low < 0 else f"{low:g}{'-' if whole else '–'}{high:g}"


def standalone(svg: str) -> str:
    """A chart as an SVG file: the style rules the report page gives it, inside it."""
    head, rest = svg.split(">", 1)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{head}><style>{SVG_CSS}</style>{rest}\n'


def legend(series: Sequence[Series], width: int = WIDTH) -> str:
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
