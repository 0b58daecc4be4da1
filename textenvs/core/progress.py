"""The progress bar of long work (`textenvs eval`'s episodes, `textenvs train`'s steps):
a title, the bar, done of total, the work's own status columns, time taken and left.
On a console that is not a terminal `heartbeat.Heartbeat` says the same in lines."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def progress_bar(console: Console, title: str, *status: str) -> Progress:
    """A bar on `console`; `title` and each `status` are rich column formats (their task's
    `description` and `fields`: "[bold]{task.description}", "{task.fields[status]}")."""
    return Progress(
        TextColumn(title),
        BarColumn(),
        MofNCompleteColumn(),
        *(TextColumn(column) for column in status),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )
