"""Pure ASGI middleware in front of every route, in this order, all before a body is read:

- Every request needs exactly one well-formed `Host` (a name or address and an optional
  port, nothing else); a server without tokens serves only the host names it was told
  (loopback by default), so a web page cannot reach it through DNS rebinding (a browser
  sends the attacker's name).
- Authentication: with tokens, every request but `PUBLIC_PATHS` (health, and the play
  page's own files, which a browser loads before the page can ask for a token) needs one
  (a 401 otherwise; a WebSocket is refused with 403). Routes read the client from the
  scope (`CLIENT`), so no route, present or future, can be reached without one.
- Each client's requests in flight: at most its share of the connection cap (as for
  WebSockets, see `sockets.py`); past it a `429 too_many_requests`. So whatever one client
  keeps in flight, the rest of the cap is left for the others. Its refused requests count
  until they are answered: a client that keeps sending what is refused is refused here,
  before the app's routing (300 connections of refused creates against a cap of 256,
  each evicted one straight back, kept the server busy 56% of a core through the app,
  31% refused here). Clients then take turns starting their requests (`fairness.py`).
- Refused requests (401 and 429, from here or from a route, and a full server's 503) are
  answered after a pause (`REFUSAL_PAUSE_S`), their body never read, and meanwhile the
  connection is marked as holding only refused work (the connection cap evicts it first,
  see `connections.py`): a flood of refusals costs the server one answer per connection
  per pause, and takes no room from anyone else. The pause
  starts once the app has returned (a parked refusal holds its answer, not the app's
  handlers), and refusals whose pauses end together are answered one a turn. An answer
  given before its request's body was read closes the connection (the rest of the body
  would arrive where the next request's head is read).
- Bodies over `max_bytes` get a 413 before any parsing, chunked uploads included, and
  each body's bytes count against its client's allowance (`bodies`, a 429 past it):
  parsing costs the server about what a client sends, valid or not.
- An exception that escapes a route becomes a JSON 500 and the connection stays usable
  (Starlette's outermost handler re-raises, and the server then drops the connection).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import Counter
from collections.abc import Awaitable
from typing import Any

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from textenvs.core.parsing import excerpt
from textenvs.service.sessions import ServiceError
from textenvs.service.tenancy import CLIENT, Credentials, RateLimiter
from textenvs.service.transport.connections import PARK
from textenvs.service.transport.fairness import Turns

log = logging.getLogger("textenvs.service")

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: seconds before a refused request (401, 429, or 503 from a full server) is answered
REFUSAL_PAUSE_S = 1.0
PAUSED_STATUSES = frozenset({401, 429, 503})
#: paths served without a token: liveness, and the play page's static files (no data)
PUBLIC_PATHS = re.compile(r"/v1/health|/|/play/?|/play/static/[^/]+")
RETRY = {"Retry-After": "1"}
PUBLIC = " public"  # the turns of requests without a client (no client name has a space)


def error_response(
    status: int, code: str, message: str, details: list[dict[str, Any]] | None = None, **kw: Any
) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "details": details or []}}
    return JSONResponse(body, status_code=status, **kw)


# RFC 3986 host and optional port: a registered name or IPv4 address, or an IPv6 literal
# in brackets. Nothing may follow (`[::1].evil.example`, `localhost:80@evil.example`).
_HOST = re.compile(r"(?:\[([0-9a-f:.]+)\]|([a-z0-9._~-]+))(?::[0-9]{1,5})?")


def host_name(host_header: bytes) -> str | None:
    """`example.org:8000` -> `example.org`; `[::1]:8000` -> `::1` (lower case); None for
    anything that is not exactly a host and optional port."""
    host = host_header.decode("latin-1").strip().lower()
    match = _HOST.fullmatch(host)
    if match is None:
        return None
    return match.group(1) or match.group(2)


def the_host(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The one well-formed Host name of a request; None when it is missing, repeated or
    malformed (RFC 9112 answers all three with 400)."""
    hosts = [value for name, value in headers if name == b"host"]
    return host_name(hosts[0]) if len(hosts) == 1 else None


class InFlight:
    """Requests each client has in flight (refused ones until answered), against a share
    each."""

    def __init__(self, per_client: int) -> None:
        self.per_client = per_client
        self._count: Counter[str] = Counter()

    def take(self, client: str) -> bool:
        if self._count[client] >= self.per_client:
            return False
        self._count[client] += 1
        return True

    def hold(self, client: str) -> None:
        """Count a refused request until `release`, over the share or not."""
        self._count[client] += 1

    def release(self, client: str) -> None:
        self._count[client] -= 1
        if not self._count[client]:
            del self._count[client]


class Guard:
    """Host allow-list (when `allowed_hosts` is not None), authentication, requests in
    flight per client, paused refusals, body limit and crash guard."""

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        credentials: Credentials,
        in_flight: int,
        bodies: RateLimiter,
        turns: Turns,
        allowed_hosts: frozenset[str] | None = None,
        pause: float = REFUSAL_PAUSE_S,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.credentials = credentials
        self.bodies = bodies  # body bytes per client
        self.turns = turns
        self.in_flight = InFlight(in_flight)
        self.allowed_hosts = allowed_hosts
        self.pause = pause

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            receive, send = closing_when_unread(scope, receive, send)
        host = the_host(scope["headers"])
        allowed = self.allowed_hosts is None or "*" in self.allowed_hosts
        if host is None or not (allowed or host in self.allowed_hosts):  # type: ignore[operator]
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})  # the server sends 403
                return
            message = (
                "this server does not serve that Host name (see --allowed-host)"
                if host
                else "a request needs exactly one Host header of a host name and port"
            )
            await error_response(400, "bad_host", message)(scope, receive, send)
            return
        if PUBLIC_PATHS.fullmatch(scope["path"]):
            await self.turns.take(PUBLIC)  # all who send no token take turns as one
            await self._sized(scope, receive, send)
            return
        try:
            client = self.credentials.client_for(_header(scope, b"authorization"))
        except ServiceError as exc:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})  # the server sends 403
                return
            await self._refuse(service_error_response(exc), scope, receive, send, PUBLIC)
            return
        scope[CLIENT] = client
        if scope["type"] == "websocket":  # counted by the socket's route (sockets.py)
            await self.app(scope, receive, send)
            return
        if not self.in_flight.take(client):
            message = (
                f"this client has its {self.in_flight.per_client} requests in flight "
                "(refused ones count until answered: wait for their Retry-After)"
            )
            refusal = error_response(429, "too_many_requests", message, headers=RETRY)
            await self._refuse(refusal, scope, receive, send, client)
            return
        await self.turns.take(client)
        holding_send, held = holding_refusals(send)
        try:
            await self._sized(scope, receive, holding_send)
        finally:
            self.in_flight.release(client)
        if held:
            await self._answer_after_pause(scope, send, held, client)

    async def _refuse(
        self, refusal: ASGIApp, scope: Scope, receive: Receive, send: Send, client: str
    ) -> None:
        holding_send, held = holding_refusals(send)
        await refusal(scope, receive, holding_send)
        await self._answer_after_pause(scope, send, held, client)

    async def _answer_after_pause(
        self, scope: Scope, send: Send, held: list[Message], client: str
    ) -> None:
        """Sends a refusal's `held` messages `pause` seconds on, with its connection parked
        meanwhile (after the app has returned: `connections.offering_park`), counted in
        its client's requests in flight until then. Refusals parked together end
        together: they are answered one a turn per client, as requests start."""
        self.in_flight.hold(client)

        async def answer(still_open: bool) -> None:
            try:
                if still_open:
                    await self.turns.take(client)
                    for message in held:
                        await send(message)
            finally:
                self.in_flight.release(client)

        park = scope.get("extensions", {}).get(PARK)
        if park is not None:
            park(self.pause, answer)
            return
        still_open = False  # a server without the guarded protocol (tests)
        try:
            await asyncio.sleep(self.pause)
            still_open = True
        finally:
            await answer(still_open)

    async def _sized(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                if not value.isdigit():
                    message = "invalid Content-Length"
                    await error_response(400, "bad_request", message)(scope, receive, send)
                    return
                if int(value) > self.max_bytes:
                    await self._too_big(scope, receive, send)
                    return
                if not await self._afforded(int(value), scope, receive, send):
                    return
                # The server delivers at most Content-Length bytes: no need to count them.
                await self._guarded(scope, receive, send)
                return
        # Read the body (bounded) so chunked uploads are limited too, then replay it.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._too_big(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        if not await self._afforded(size, scope, receive, send):
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self._guarded(scope, replay, send)

    async def _afforded(self, size: int, scope: Scope, receive: Receive, send: Send) -> bool:
        """Takes a body's bytes from its client's allowance (what parsing it will cost),
        waiting its turn, or answers 429 and returns False."""
        client = scope.get(CLIENT)
        try:
            if client is not None and size:
                await self.bodies.turn(client, size)
        except ServiceError as exc:
            await service_error_response(exc)(scope, receive, send)
            return False
        return True

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            path = excerpt(str(scope.get("path", "")), 100)
            log.exception("internal error on %s %s", scope.get("method"), path)
            if not started:
                await error_response(500, "internal_error", "internal server error")(
                    scope, receive, send
                )

    def _too_big(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        message = f"request bodies are limited to {self.max_bytes} bytes"
        return error_response(413, "payload_too_large", message)(scope, receive, send)


def holding_refusals(send: Send) -> tuple[Send, list[Message]]:
    """`send`, but a refusal's messages (a response with a status in `PAUSED_STATUSES`)
    are put in the list instead, to be sent after the pause."""
    held: list[Message] = []

    async def holding_send(message: Message) -> None:
        refused = message["type"] == "http.response.start" and message["status"] in PAUSED_STATUSES
        if held or refused:
            held.append(message)
        else:
            await send(message)

    return holding_send, held


def closing_when_unread(scope: Scope, receive: Receive, send: Send) -> tuple[Receive, Send]:
    """`receive` and `send` of an HTTP request, but an answer that starts before the
    request's body was read (a refusal) closes the connection: the rest of the body would
    arrive after it, where the next request's head is read (a refused 249 KB body made
    the next request on the connection `431 headers too large`)."""
    unread = any(
        name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0")
        for name, value in scope["headers"]
    )
    if not unread:
        return receive, send

    async def tracking_receive() -> Message:
        nonlocal unread
        message = await receive()
        if not message.get("more_body", False):
            unread = False  # the whole body, or the client went away
        return message

    async def closing_send(message: Message) -> None:
        if message["type"] == "http.response.start" and unread:
            headers = [*message.get("headers", []), (b"connection", b"close")]
            message = {**message, "headers": headers}
        await send(message)

    return tracking_receive, closing_send


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def service_error_response(exc: ServiceError) -> JSONResponse:
    return error_response(exc.status, exc.code, exc.message, exc.details, headers=exc.headers)
