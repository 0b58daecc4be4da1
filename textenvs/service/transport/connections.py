"""Connection hygiene for uvicorn: a request read timeout and a connection cap.

uvicorn closes idle keep-alive connections, but a client that connects and stays silent, or
drips a header a byte at a time, holds its socket (and a file descriptor) for as long as it
likes; and nothing bounds how many connections are open. `guarded_protocol` wraps uvicorn's
HTTP protocol class (httptools or h11) so that:

- a request's headers and body must arrive within `read_timeout` seconds of the connection
  opening (or of the previous response); otherwise the connection is closed;
- at most `max_connections` connections (WebSockets included) are open: a new connection
  over the cap evicts a connection holding only a refused request (one waiting out its
  pause before a 401 or 429, see `park`), else the one that has waited longest for its
  request (a silent or dripping one), and when every connection is busy with accepted
  work it is itself closed. So neither a flood of silent connections nor one of refused
  requests can lock out `/v1/health` or anyone else (the app keeps a quarter of the cap
  free of WebSockets, see `sockets.py`, and each client's requests in flight to its
  share, see `guards.py`);
- a request line and headers over `max_header_bytes` get `431` and the connection closes
  (httptools would otherwise buffer a header of any size); only the head counts, not
  body bytes that arrive in the same read;
- a connection reads no further than the request being answered (HTTP pipelining): with
  httptools, which parses every request in a read at once, at most `MAX_PIPELINED`
  requests wait behind it; past that the connection reads nothing more and closes once
  they are answered (h11 reads one request at a time by itself).

So what one connection makes the server hold is one request (its body at most
`--max-body-bytes`), a few pipelined heads and one socket read; WebSockets are bounded
the same way by `ws_reading.py`.

`uvicorn_settings(...)` gives uvicorn's settings with it; `textenvs serve` uses them.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import uvicorn.protocols.http.h11_impl as h11_impl
import uvicorn.protocols.http.httptools_impl as httptools_impl
from starlette.types import ASGIApp, Receive, Scope, Send

from textenvs.service.models import DEFAULT_MAX_HEADER_BYTES
from textenvs.service.transport.ws_reading import OneMessageAtATime

#: requests a connection may have read and waiting behind the one being answered
MAX_PIPELINED = 8
#: ASGI scope extension this protocol offers the app: `park(seconds, answer)` answers a
#: refused request later: once the app has returned, the connection waits out `seconds`
#: marked as holding only refused work, then `await answer(still_open)`
PARK = "textenvs.park"
#: what answers a parked request: sends the messages the app held back when the
#: connection is still open; called once either way (an evicted connection's too)
Answer = Callable[[bool], Awaitable[None]]


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

    httptools = issubclass(base, httptools_impl.HttpToolsProtocol)
    bases = (BoundedPipeline, base) if httptools else (base,)
    # The connections a newcomer over the cap may close, oldest first (dicts keep their
    # order): the first parked one, else the one waiting longest for its request. (A
    # scan of every connection per newcomer cost more than the newcomer's request when a
    # flood of connections came in.)
    parked: dict[asyncio.Protocol, None] = {}
    waiting: dict[asyncio.Protocol, None] = {}

    class GuardedProtocol(*bases):  # type: ignore[misc]
        _unparked: asyncio.Future[None] | None = None  # set when a parked wait is over
        _read_timer: asyncio.TimerHandle | None = None
        _header_bytes = 0  # of the request being read, before its headers are complete
        _head_tail = b""  # the last bytes of that head so far (its end may span two reads)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # weakly: a connection referring to itself would outlive its close until the
            # garbage collector found the cycle (a flood of connections made it work hard)
            self.app = offering_park(self.app, weakref.WeakMethod(self.park))

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._wait_for_request()
            if len(self.connections) > max_connections:
                victim = next(iter(parked), None) or next(iter(waiting), self)
                victim.transport.close()  # type: ignore[attr-defined]

        def data_received(self, data: bytes) -> None:
            cycle = self.cycle
            if cycle is None or cycle.response_complete:  # still reading a request head
                self._header_bytes += self._head_part(data)
                if self._header_bytes > max_header_bytes:
                    self.transport.write(too_large)
                    self.transport.close()
                    return
            super().data_received(data)
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                self._header_bytes, self._head_tail = 0, b""  # the head is read
            reading = cycle is None or cycle.response_complete or cycle.more_body
            if not reading and self in waiting:
                self._stop_waiting()

        def _head_part(self, data: bytes) -> int:
            """How many of `data`'s bytes belong to the head being read (body bytes sent
            in the same read as the end of the head do not count)."""
            seen = self._head_tail + data
            end = seen.find(b"\r\n\r\n")
            counted = len(data) if end < 0 else end + 4 - len(self._head_tail)
            self._head_tail = seen[-3:]
            return counted

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._wait_for_request()

        async def park(self, seconds: float) -> bool:
            """Waits `seconds` before a refused request is answered; meanwhile this
            connection is the first to go when a newcomer finds the cap full (and then
            the wait ends: nobody is left to answer). Whether it is still open."""
            parked[self] = None
            self._unparked = self.loop.create_future()
            timer = self.loop.call_later(seconds, self._unpark)
            try:
                await self._unparked
            finally:
                timer.cancel()
                parked.pop(self, None)
            return not self.transport.is_closing()

        def _unpark(self) -> None:
            if self._unparked is not None and not self._unparked.done():
                self._unparked.set_result(None)

        def connection_lost(self, exc: Exception | None) -> None:
            self._forget()
            super().connection_lost(exc)

        def handle_websocket_upgrade(self, *args: Any) -> None:
            self._forget()  # the connection is the WebSocket protocol's from now on
            super().handle_websocket_upgrade(*args)

        def _forget(self) -> None:
            self._stop_waiting()
            parked.pop(self, None)
            self._unpark()

        def _wait_for_request(self) -> None:
            self._stop_waiting()
            waiting[self] = None  # the newest
            self._read_timer = self.loop.call_later(read_timeout, self._read_timed_out)

        def _stop_waiting(self) -> None:
            waiting.pop(self, None)
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


class BoundedPipeline(httptools_impl.HttpToolsProtocol):
    """httptools parses every request of a socket read at once and uvicorn queues them all
    (250 KB of pipelined `GET /v1/health` behind one slow request were 16 MB of queued
    requests): at most `MAX_PIPELINED` wait here; past that the rest of the read is
    dropped, nothing more is read, and the connection closes after the last queued one is
    answered (RFC 9112 lets a server close; the client retries the rest). Nothing more is
    read either while the last request read is whole and unanswered."""

    _pipeline_full = False

    def data_received(self, data: bytes) -> None:
        if not self._pipeline_full:
            super().data_received(data)
            self._read_no_further()

    def on_headers_complete(self) -> None:
        if self._pipeline_full:
            return
        if len(self.pipeline) >= MAX_PIPELINED:
            self._pipeline_full = True
            self.cycle.keep_alive = False  # closes after the last request it accepted
            self.flow.pause_reading()
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._pipeline_full:  # else a dropped request's body
            super().on_body(body)

    def on_message_complete(self) -> None:
        if not self._pipeline_full:
            super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._read_no_further()

    def handle_websocket_upgrade(self) -> None:
        if self._pipeline_full or not (self.cycle is None or self.cycle.response_complete):
            self.transport.close()  # an upgrade pipelined behind a request: refused
            return
        super().handle_websocket_upgrade()

    def _read_no_further(self) -> None:
        """Pauses reading while the last request read is unanswered and needs no more
        bytes (whole, or queued behind another): what follows it is read once it is
        answered. (The app reading its body resumes reading, as in uvicorn.)"""
        cycle = self.cycle
        unanswered = cycle is not None and not cycle.response_complete
        if unanswered and (not cycle.more_body or self.pipeline):
            self.flow.pause_reading()


def offering_park(app: ASGIApp, park: weakref.WeakMethod) -> ASGIApp:
    """`app` with `PARK` offered in each request's scope while the request runs: an
    answer it parks is sent after the app has returned, so a parked request holds its
    answer, not the app's handlers (their frames and the refusal's exception)."""

    async def with_park(scope: Scope, receive: Receive, send: Send) -> None:
        parked: list[tuple[float, Answer]] = []
        extensions = scope.setdefault("extensions", {})
        extensions[PARK] = lambda seconds, answer: parked.append((seconds, answer))
        returned = False
        try:
            await app(scope, receive, send)
            returned = True
        finally:
            del extensions[PARK]  # the scope would refer to its own answer: a cycle
            for seconds, answer in parked:  # each answered once, whatever happens
                connection = park() if returned else None  # None once it is gone
                still_open = False
                try:
                    still_open = connection is not None and await connection(seconds)
                finally:
                    await answer(still_open)

    return with_park


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
        "ws": OneMessageAtATime,  # see ws_reading.py
        "ws_per_message_deflate": False,
        "ws_max_size": max_body_bytes,  # one WebSocket message, like one request body
        "backlog": max(2048, max_connections),
    }
