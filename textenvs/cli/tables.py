"""Where the commands print their result tables."""

from __future__ import annotations

from rich.console import Console

# Wide enough for any table; a table takes only the width its cells need.
UNLIMITED_WIDTH = 10_000


def stdout_console() -> Console:
    """A console for tables on stdout. On a terminal, rich fits the table to the window;
    piped or logged, nothing is cut or wrapped (rich would otherwise assume 80 columns
    and shorten cells with an ellipsis)."""
    console = Console()
    if console.is_terminal:
        return console
    return Console(width=UNLIMITED_WIDTH, soft_wrap=True, no_color=True, highlight=False)
