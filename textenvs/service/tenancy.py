"""Who is calling, and how much they may do: credentials, per-client limits, rate buckets.

A client is the credential it presents. With no tokens configured every caller is the one
client `anonymous` (a loopback, single-user server); with tokens, each `name token` pair is
a client of its own, and sessions belong to the client that created them.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from textenvs.service.models import DEFAULT_PATIENCE_S
from textenvs.service.sessions import ServiceError

ANONYMOUS = "anonymous"
#: the scope key under which the guard (`transport/guards.py`) leaves the authenticated client
CLIENT = "textenvs.client"


class CredentialError(ValueError):
    """A token file or token variable that cannot be used (a one-line reason)."""


def read_token_file(path: str | Path) -> dict[str, str]:
    """`name token` pairs, one a line (blank lines and `#` comments skipped): name -> token."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CredentialError(f"cannot read token file {path}: {exc}") from None
    tokens: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise CredentialError(
                f"{path}:{number}: expected 'name token', got {len(parts)} fields"
            )
        name, token = parts
        if name in tokens:
            raise CredentialError(f"{path}:{number}: client '{name}' is listed twice")
        if len(token) < 16:
            raise CredentialError(f"{path}:{number}: the token of '{name}' is under 16 characters")
        tokens[name] = token
    if len(set(tokens.values())) != len(tokens):
        raise CredentialError(f"{path}: two clients share a token")
    if not tokens:
        raise CredentialError(f"{path}: no 'name token' lines")
    return tokens


class Credentials:
    """Maps a presented token to its client's name (constant-time comparisons)."""

    def __init__(self, tokens: dict[str, str] | None = None) -> None:
        self._tokens = [(name, token.encode("utf-8")) for name, token in (tokens or {}).items()]

    @property
    def required(self) -> bool:
        return bool(self._tokens)

    def client_for(self, authorization: str | None) -> str:
        """The client named by an `Authorization` header: `Bearer <token>`, or `Basic` with
        the token as password (what WebSocket clients send for `ws://name:token@host`)."""
        if not self._tokens:
            return ANONYMOUS
        given = _presented_token(authorization or "")
        match = None
        for name, token in self._tokens:  # compare with every token: no early exit
            if hmac.compare_digest(given, token):
                match = name
        if match is None:
            raise ServiceError(
                401,
                "unauthorized",
                "a valid 'Authorization: Bearer <token>' header is required",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return match


BEARER = HTTPBearer(auto_error=False, description="a token from --token-env or --token-file")


async def current_client(
    request: Request,
    _documented: HTTPAuthorizationCredentials | None = Depends(BEARER),  # noqa: B008
) -> str:
    """The route dependency: the caller's client name, as the guard authenticated it
    before routing (and before the body was read)."""
    return client_of(request.scope)


def client_of(scope: dict[str, Any]) -> str:
    client = scope.get(CLIENT)
    if client is None:  # a bug: a route on a public path (transport/guards.py) asks for one
        raise RuntimeError(f"no client authenticated for {scope.get('path')!r}")
    return str(client)


Client = Annotated[str, Depends(current_client)]


def admits(check: Callable[[str], Awaitable[None]]) -> Callable[[Any], Any]:
    """Marks a route's endpoint: `await check(client)` (which takes the request's place
    in the client's allowance, waiting its turn, or refuses it) runs before its body is
    read or validated, so a refused request is never parsed. Needs `AdmittedRoute`."""

    def mark(endpoint: Any) -> Any:
        endpoint.admission = check
        return endpoint

    return mark


class AdmittedRoute(APIRoute):
    """A route that runs its endpoint's `admits` check before FastAPI reads the body."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handle = super().get_route_handler()
        check = getattr(self.endpoint, "admission", None)
        if check is None:
            return handle

        async def admitted(request: Request) -> Any:
            await check(client_of(request.scope))
            return await handle(request)

        return admitted


def _presented_token(header: str) -> bytes:
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() == "bearer":
        return value.strip().encode("utf-8")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return b""
        return decoded.partition(":")[2].encode("utf-8")
    return b""


@dataclass(frozen=True)
class ClientLimits:
    """What one client may do. `max_sessions` 0: the server's session cap shared evenly
    between the configured clients; a rate of 0: no limit."""

    max_sessions: int = 0
    #: creations and resets come as many at once as the client may hold sessions (a
    #: trainer opening its batch), else a second's worth
    creates_per_minute: float = 1200.0
    # 20 a second: a Squad Recon reset takes 2-3 ms on the event loop, so at this rate one
    # client's resets hold it about 6% of the time (at 6,000 a minute, all of it)
    resets_per_minute: float = 1200.0
    steps_per_second: float = 5000.0
    # GETs of scenarios, sessions and the play page's API: a progress answer of a big run is
    # tens of KB, and `GET /v1/envs` every scenario's rules
    reads_per_second: float = 20.0
    #: request bodies and WebSocket messages, in bytes: what parsing costs the server
    body_bytes_per_second: float = 1024 * 1024
    #: seconds a request (or WebSocket message) over a rate waits its turn before it is
    #: refused instead (0: refused at once)
    patience: float = DEFAULT_PATIENCE_S


@dataclass
class TokenBucket:
    """`rate` tokens a second, up to `capacity` saved up (the allowed burst)."""

    rate: float
    capacity: float
    tokens: float = field(init=False)
    updated: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = self.capacity

    def reserve(self, cost: float, patience: float) -> float:
        """Takes `cost` tokens if they are there within `patience` seconds (the bucket
        then owes them: later takers wait behind this one), returning the seconds until
        they are; else takes nothing and returns -(seconds until a retry would be taken)."""
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        wait = max(0.0, (cost - self.tokens) / self.rate)
        if wait > patience:
            return -(wait - patience)
        self.tokens -= cost
        return wait


class RateLimiter:
    """One bucket per client for one kind of request. Work over the rate waits its turn
    (in arrival order) for up to `patience` seconds; past that it is a 429 with
    Retry-After. So a burst is shaped, not refused: 256 clients connecting at once are
    served one after another at the rate instead of all but the first few failing."""

    def __init__(self, per_second: float, burst: float, what: str, patience: float = 0.0) -> None:
        self.per_second = per_second
        self.burst = max(burst, 1.0)
        self.what = what
        self.patience = patience
        self._buckets: dict[str, TokenBucket] = {}

    async def turn(self, client: str, cost: float = 1.0) -> None:
        """Takes `cost` of `client`'s allowance, waiting for it up to `patience` seconds,
        or raises a 429 (taking nothing) when it would have to wait longer."""
        if self.per_second <= 0:
            return
        wait = self._bucket(client).reserve(min(cost, self.burst), self.patience)
        if wait < 0:
            raise ServiceError(
                429,
                "rate_limited",
                f"too many {self.what}; retry after the Retry-After header's seconds",
                headers={"Retry-After": str(max(1, math.ceil(-wait)))},
            )
        if wait > 0:
            await asyncio.sleep(wait)

    def _bucket(self, client: str) -> TokenBucket:
        bucket = self._buckets.get(client)
        if bucket is None:
            bucket = self._buckets[client] = TokenBucket(self.per_second, self.burst)
        return bucket


def body_bytes_limiter(limits: ClientLimits, max_body_bytes: int) -> RateLimiter:
    """Body and message bytes per client: a second's allowance or 16 of the largest
    bodies as a burst, whichever is more."""
    rate = limits.body_bytes_per_second
    burst = max(rate, 16.0 * max_body_bytes)
    return RateLimiter(rate, burst, "request bytes", limits.patience)


MIN_BURST = 10.0  # a per-minute allowance comes a second's worth at once, or this many


def per_minute(allowance: float, what: str, at_once: float, patience: float) -> RateLimiter:
    """`allowance` a minute, refilling steadily; `at_once` of it (or a second's worth, at
    least `MIN_BURST`, when more) in one burst, and never more than the whole allowance."""
    rate = allowance / 60.0
    return RateLimiter(rate, min(allowance, max(rate, MIN_BURST, at_once)), what, patience)


def limiters(
    limits: ClientLimits, sessions_each: int
) -> tuple[RateLimiter, RateLimiter, RateLimiter, RateLimiter]:
    """(creates, resets, steps, reads) for clients that may each hold `sessions_each`
    sessions: creations and resets refill over a minute and come as many at once as a
    client may hold sessions (a trainer opens its batch and starts an episode in each;
    clients take turns on the event loop, `transport/fairness.py`, so one client's burst delays
    another's requests by at most one of its own each), steps and reads refill over a
    second and come a second's worth at once."""
    patience = limits.patience
    creates = per_minute(limits.creates_per_minute, "session creations", sessions_each, patience)
    resets = per_minute(limits.resets_per_minute, "resets", sessions_each, patience)
    steps = RateLimiter(limits.steps_per_second, limits.steps_per_second, "steps", patience)
    reads = RateLimiter(limits.reads_per_second, limits.reads_per_second, "reads", patience)
    return creates, resets, steps, reads
