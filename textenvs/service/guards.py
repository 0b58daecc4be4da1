"""Pure ASGI middleware in front of every route: Host allow-list, body size, crash guard.

- Every request needs exactly one well-formed `Host` (a name or address and an optional
  port, nothing else); a server without tokens serves only the host names it was told
  (loopback by default), so a web page cannot reach it through DNS rebinding (a browser
  sends the attacker's name).
- Bodies over `max_bytes` get a 413 before any parsing, chunked uploads included.
- An exception that escapes a route becomes a JSON 500 and the connection stays usable
  (Starlette's outermost handler re-raises, and the server then drops the connection).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable
from typing import Any

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from textenvs.core.parsing import excerpt

log = logging.getLogger("textenvs.service")

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


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


class Guard:
    """Host allow-list (when `allowed_hosts` is not None), body limit and crash guard."""

    def __init__(
        self, app: ASGIApp, max_bytes: int, allowed_hosts: frozenset[str] | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
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
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        for name, value in scope["headers"]:
            if name == b"content-length":
                if not value.isdigit():
                    message = "invalid Content-Length"
                    await error_response(400, "bad_request", message)(scope, receive, send)
                    return
                if int(value) > self.max_bytes:
                    await self._too_big(scope, receive, send)
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
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self._guarded(scope, replay, send)

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
