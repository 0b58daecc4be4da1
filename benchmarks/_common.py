"""Small shared helpers for the benchmark scripts (medians, tables)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_rate(run: Callable[[], int], repeats: int) -> float:
    """Median over `repeats` runs of (units done / seconds) for `run() -> units`."""
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        units = run()
        rates.append(units / (time.perf_counter() - started))
    return statistics.median(rates)


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])
