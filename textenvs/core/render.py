"""Small helpers for the text an agent reads: labelled grids and status lines.

Everything returned is printable ASCII (the observation space's charset).
"""

from __future__ import annotations

from collections.abc import Sequence


def grid(
    rows: Sequence[Sequence[str]],
    *,
    col_labels: Sequence[str],
    row_labels: Sequence[str],
    corner: str = "",
) -> str:
    """A table of cells with column labels on top and row labels on the left.

    Rows are given top first; every cell is right-aligned to the widest cell or label.
    """
    # Hot path (every observation of every step): plain loops and one join per line.
    width = max(map(len, col_labels))
    for row in rows:
        width = max(width, max(map(len, row), default=0))
    left = max(len(corner), *map(len, row_labels))
    if width > 1:
        rows = [[c.rjust(width) for c in row] for row in rows]
        col_labels = [c.rjust(width) for c in col_labels]
    lines = [f"{corner.rjust(left)} {' '.join(col_labels)}".rstrip()]
    lines += [
        f"{label.rjust(left)} {' '.join(row)}".rstrip()
        for label, row in zip(row_labels, rows, strict=True)
    ]
    return "\n".join(lines)


def status(pairs: Sequence[tuple[str, object]]) -> str:
    """'Name: value' lines, names padded so the values line up."""
    width = max(len(name) for name, _ in pairs)
    return "\n".join(f"{(name + ':').ljust(width + 1)} {value}" for name, value in pairs)


def legend(items: Sequence[tuple[str, str]]) -> str:
    """'Legend: @ you, ? unseen, ...' from (symbol, meaning) pairs."""
    return "Legend: " + ", ".join(f"{symbol} {meaning}" for symbol, meaning in items)
