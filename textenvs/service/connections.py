"""Connection hygiene for uvicorn: a request read timeout and a connection cap.

uvicorn closes idle keep-alive connections, but a client that connects and stays silent, or
drips a header a byte at a time, holds its socket (and a file descriptor) for as long as it
likes; and nothing bounds how many connections are open. `guarded_protocol` wraps uvicorn's
HTTP protocol class (httptools or h11) so that:

- a request's headers and body must arrive within `read_timeout` seconds of the connection
  opening (or of the previous response); otherwise the connection is closed;
- at most `max_connections` connections (WebSockets included) are open: a new connection
  over the cap evicts the connection that has waited longest for its request (a silent or
  dripping one) and, when every connection is busy with a request, is itself closed.
  So a flood of silent connections cannot lock out `/v1/health` or anyone else (the app
  keeps a quarter of the cap free of WebSockets, see `sockets.py`);
- a request line and headers over `max_header_bytes` get `431` and the connection closes
  (httptools would otherwise buffer a header of any size).

`uvicorn_settings(...)` gives uvicorn's settings with it; `textenvs serve` uses them.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import uvicorn.protocols.http.h11_impl as h11_impl
import uvicorn.protocols.http.httptools_impl as httptools_impl

from textenvs.service.models import DEFAULT_MAX_HEADER_BYTES


def base_protocol(http: str) -> type[asyncio.Protocol]:
    """uvicorn's protocol class for `--http auto|httptools|h11`."""
    if http == "h11":
        return h11_impl.H11Protocol
    if http == "auto":
        try:
            import httptools  # noqa: F401
        except ImportError:
            return h11_impl.H11Protocol
    return httptools_impl.HttpToolsProtocol


TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)


def guarded_protocol(
    base: type[asyncio.Protocol],
    read_timeout: float,
    max_connections: int,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
) -> type[asyncio.Protocol]:
    """`base` with a request read timeout, a connection cap and a header size limit (see
    the module docstring)."""
    body = json.dumps(
        {
            "error": {
                "code": "headers_too_large",
                "message": f"request lines and headers are limited to {max_header_bytes} bytes",
                "details": [],
            }
        }
    ).encode()
    too_large = TOO_LARGE % (len(body), body)

    class GuardedProtocol(base):  # type: ignore[valid-type, misc]
        waiting_since: float | None = None  # when it started waiting for a request
        _read_timer: asyncio.TimerHandle | None = None
        _header_bytes = 0  # of the request being read, before its headers are complete

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._wait_for_request()
            if len(self.connections) > max_connections:
                victim = _longest_waiting(self.connections)
                (victim or self).transport.close()

        def data_received(self, data: bytes) -> None:
            cycle = self.cycle
            if cycle is None or cycle.response_complete:  # still reading a request head
                self._header_bytes += len(data)
                if self._header_bytes > max_header_bytes:
                    self.transport.write(too_large)
                    self.transport.close()
                    return
            super().data_received(data)
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                self._header_bytes = 0  # the head is read: what follows is the body
            reading = cycle is None or cycle.response_complete or cycle.more_body
            if not reading and self.waiting_since is not None:
                self._stop_waiting()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._wait_for_request()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_waiting()
            super().connection_lost(exc)

        def _wait_for_request(self) -> None:
            self._stop_waiting()
            self.waiting_since = time.monotonic()
            self._read_timer = self.loop.call_later(read_timeout, self._read_timed_out)

        def _stop_waiting(self) -> None:
            self.waiting_since = None
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def _read_timed_out(self) -> None:
            self._read_timer = None
            # After a WebSocket upgrade the transport belongs to another protocol.
            if self.transport.get_protocol() is self and not self.transport.is_closing():
                self.transport.close()

    GuardedProtocol.__name__ = f"Guarded{base.__name__}"
    return GuardedProtocol


def _longest_waiting(connections: set[Any]) -> Any | None:
    waiting = [c for c in connections if getattr(c, "waiting_since", None) is not None]
    return min(waiting, key=lambda c: c.waiting_since, default=None)


def uvicorn_settings(
    http: str = "auto",
    *,
    request_timeout: float = 10.0,
    max_connections: int = 1024,
    keep_alive_timeout: int = 5,
    max_body_bytes: int = 256 * 1024,
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
) -> dict[str, Any]:
    """uvicorn settings for the guarded protocol (also used by tests and benchmarks)."""
    protocol = guarded_protocol(
        base_protocol(http), request_timeout, max_connections, max_header_bytes
    )
    return {
        "http": protocol,
        "h11_max_incomplete_event_size": max_header_bytes,
        "timeout_keep_alive": keep_alive_timeout,
        "ws_max_size": max_body_bytes,  # one WebSocket message, like one request body
        "backlog": max(2048, max_connections),
    }
