"""No secret in the server log: uvicorn writes each WebSocket handshake (and, with
`--access-log`, each request) with its path and query string. The service never reads a
token from a query string, but a client may put one there by mistake
(`ws://host/openenv/x/ws?token=...`), so its log lines keep the path and drop the query.
"""

from __future__ import annotations

import logging

UVICORN_LOGGERS = ("uvicorn.error", "uvicorn.access")
HIDDEN = "?<query hidden>"


class HideQueryStrings(logging.Filter):
    """Cuts the query string off every path-like argument of a log record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_without_query(arg) for arg in record.args)
        return True


def _without_query(arg: object) -> object:
    if isinstance(arg, str) and arg.startswith("/") and "?" in arg:
        return arg.partition("?")[0] + HIDDEN
    return arg


def hide_query_strings() -> None:
    """Installs the filter on uvicorn's loggers (once per process)."""
    for name in UVICORN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, HideQueryStrings) for f in logger.filters):
            logger.addFilter(HideQueryStrings())
