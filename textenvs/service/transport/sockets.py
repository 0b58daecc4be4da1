"""WebSockets count: against the server's connection cap and each client's share of it.

Each open session socket holds one of `max_sockets` places (a quarter of the connection
cap stays for plain requests, so `/v1/health` and other clients always get through), and a
client holds at most its even share of them. Over either limit the socket is told why
and closed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from textenvs.service.models import MAX_JSON_DEPTH
from textenvs.service.sessions import ServiceError

MAX_MESSAGE_DEPTH = MAX_JSON_DEPTH + 3  # {"type", "data": {"options": ...}} around options


def socket_limits(max_connections: int, clients: int) -> tuple[int, int]:
    """(sockets in all, sockets per client) for a connection cap and a client count."""
    total = max(1, max_connections * 3 // 4)
    return total, max(1, total // max(1, clients))


#: seconds a WebSocket may go without a message (an agent thinking between steps included)
DEFAULT_SOCKET_IDLE_S = 120.0


class SocketCount:
    def __init__(
        self,
        max_sockets: int,
        per_client: int,
        idle_timeout: float = DEFAULT_SOCKET_IDLE_S,
        refusal_pause: float = 1.0,
    ) -> None:
        self.max_sockets = max_sockets
        self.per_client = per_client
        #: a socket that sends no message for this long is closed (1001), so an idle
        #: socket cannot hold a connection slot for the session's whole idle timeout
        self.idle_timeout = idle_timeout
        #: seconds before a message over a limit is answered `rate_limited`
        self.refusal_pause = refusal_pause
        self._open: Counter[str] = Counter()

    @contextmanager
    def hold(self, client: str) -> Iterator[None]:
        if self._open[client] >= self.per_client:
            raise ServiceError(
                429,
                "too_many_sockets",
                f"this client holds its maximum of {self.per_client} open WebSockets",
            )
        if self._open.total() >= self.max_sockets:
            raise ServiceError(
                503, "at_capacity", f"the server holds its maximum of {self.max_sockets} WebSockets"
            )
        self._open[client] += 1
        try:
            yield
        finally:
            self._open[client] -= 1
            if not self._open[client]:
                del self._open[client]


def depth_at_most(value: Any, limit: int) -> bool:
    """Whether JSON-like `value` nests at most `limit` containers deep (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True
