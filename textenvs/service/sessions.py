"""Server-side sessions: one env per session, a lock each, an owner each, idle expiry, a
maximum lifetime, and capacity limits (for the server and for each owner).

No request does work in proportion to the number of sessions: expiry deadlines wait in a
heap, so reaping costs the entries that come due, not every session (a deadline is
checked when it comes up, and pushed back if the session was used since).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from textenvs.core.env import TextEnv


class ServiceError(Exception):
    """An error with an HTTP status and a stable machine-readable code."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.details = details or []


@dataclass(eq=False)
class Session:
    id: str
    env_name: str
    env: TextEnv[Any, Any]
    seed: int
    observation: str
    info: dict[str, Any]
    owner: str = "anonymous"
    #: a name the client gave, shared by sessions it may close together (`remove_labelled`)
    label: str | None = None
    created: float = field(default_factory=time.monotonic)
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: awaited before a step's answer is sent (a recorded episode's write: play/record.py)
    before_answer: Callable[[], Awaitable[None]] | None = None

    def touch(self) -> None:
        """Only steps and resets count as use: reading a session does not keep it alive."""
        self.last_used = time.monotonic()


NOT_FOUND = "no such session (or it has expired)"
BUSY_RECHECK_S = 1.0  # a session mid-request at its deadline is looked at again this late


class SessionStore:
    """All live sessions. Only the owner holding a session id can reach its session (any
    other owner gets the same 404 as for an unknown id); there is no way to enumerate ids."""

    def __init__(
        self,
        max_sessions: int = 1000,
        idle_timeout: float = 600.0,
        max_lifetime: float = 0.0,
        max_per_owner: int = 0,
    ) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.max_sessions = max_sessions
        #: seconds without a step or reset before a session is dropped; 0 disables expiry
        self.idle_timeout = idle_timeout
        #: seconds after creation when a session is dropped however busy; 0: no limit
        self.max_lifetime = max_lifetime
        #: live sessions one owner may hold; 0: only the server's limit
        self.max_per_owner = max_per_owner
        self._sessions: dict[str, Session] = {}
        self._owned: Counter[str] = Counter()
        self._labelled: dict[tuple[str, str], set[str]] = {}  # (owner, label) -> ids
        # (deadline, tie-break, session id): a session's entry may be early (it was used
        # since) or stale (it was dropped); `reap` sorts both out when they come up
        self._deadlines: list[tuple[float, int, str]] = []
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._sessions)

    def held_by(self, owner: str) -> int:
        """How many live sessions `owner` holds."""
        return self._owned[owner]

    @property
    def owner_cap(self) -> int:
        """How many sessions one owner may hold at most (when the server has room)."""
        return min(self.max_per_owner or self.max_sessions, self.max_sessions)

    def new_id(self) -> str:
        return secrets.token_urlsafe(24)  # 192 random bits

    def reserve(self, owner: str = "anonymous") -> None:
        """A 429 when `owner` holds its share, a 503 when the server is full (expired
        sessions are dropped first)."""
        full = len(self._sessions) >= self.max_sessions
        if full or self._owner_full(owner):
            self.reap()
        if self._owner_full(owner):
            raise ServiceError(
                429,
                "too_many_sessions",
                f"this client holds its maximum of {self.max_per_owner} open sessions; "
                "delete finished sessions first",
                headers={"Retry-After": "1"},
            )
        if len(self._sessions) >= self.max_sessions:
            raise ServiceError(
                503,
                "at_capacity",
                f"the server holds its maximum of {self.max_sessions} sessions; "
                "delete finished sessions or retry later",
                headers={"Retry-After": "1"},
            )

    def add(self, session: Session) -> None:
        self.reserve(session.owner)
        self._sessions[session.id] = session
        self._owned[session.owner] += 1
        if session.label is not None:
            self._labelled.setdefault((session.owner, session.label), set()).add(session.id)
        self._schedule(session.id, self._deadline(session))

    def get(self, session_id: str, owner: str = "anonymous") -> Session:
        session = self._sessions.get(session_id)
        if session is None or session.owner != owner:
            raise ServiceError(404, "unknown_session", NOT_FOUND)
        if self._expired(session, time.monotonic()):
            self._drop(session)
            raise ServiceError(404, "unknown_session", NOT_FOUND)
        return session

    def remove(self, session_id: str, owner: str = "anonymous") -> None:
        self._drop(self.get(session_id, owner))

    def remove_labelled(self, label: str, owner: str = "anonymous") -> int:
        """Drop every session of `owner` named `label`; returns how many."""
        ids = self._labelled.get((owner, label), set())
        sessions = [self._sessions[i] for i in list(ids)]
        for session in sessions:
            self._drop(session)
        return len(sessions)

    def reap(self) -> int:
        """Drop every expired session; returns how many. Costs the entries that are due,
        not the number of sessions."""
        now, dropped = time.monotonic(), 0
        while self._deadlines and self._deadlines[0][0] <= now:
            _, _, session_id = heapq.heappop(self._deadlines)
            session = self._sessions.get(session_id)
            if session is None:
                continue  # dropped already
            deadline = self._deadline(session)
            if deadline > now:  # used since this entry was pushed
                self._schedule(session_id, deadline)
            elif session.lock.locked():  # mid-request: the request finishes first
                self._schedule(session_id, now + BUSY_RECHECK_S)
            else:
                self._drop(session)
                dropped += 1
        return dropped

    def clear(self) -> None:
        for session in list(self._sessions.values()):
            self._drop(session)

    async def reap_forever(self) -> None:
        """The reaper: runs for the server's lifetime (cancelled at shutdown)."""
        limits = [t for t in (self.idle_timeout, self.max_lifetime) if t > 0]
        if not limits:
            return
        interval = min(max(min(limits) / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            self.reap()

    def _owner_full(self, owner: str) -> bool:
        return 0 < self.max_per_owner <= self._owned[owner]

    def _deadline(self, session: Session) -> float:
        """When `session` expires unless it is used first (infinity: never)."""
        idle = session.last_used + self.idle_timeout if self.idle_timeout > 0 else math.inf
        old = session.created + self.max_lifetime if self.max_lifetime > 0 else math.inf
        return min(idle, old)

    def _schedule(self, session_id: str, deadline: float) -> None:
        if deadline < math.inf:
            heapq.heappush(self._deadlines, (deadline, next(self._order), session_id))

    def _expired(self, session: Session, now: float) -> bool:
        if session.lock.locked():  # mid-request: the request finishes first
            return False
        return self._deadline(session) < now

    def _drop(self, session: Session) -> None:
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]
            self._owned[session.owner] -= 1
            if not self._owned[session.owner]:
                del self._owned[session.owner]
            if session.label is not None:
                ids = self._labelled[(session.owner, session.label)]
                ids.discard(session.id)
                if not ids:
                    del self._labelled[(session.owner, session.label)]
            if len(self._deadlines) > 2 * len(self._sessions) + 64:
                self._rebuild_deadlines()  # mostly stale entries: linear, amortised over drops
        session.env.close()

    def _rebuild_deadlines(self) -> None:
        entries = [(self._deadline(s), next(self._order), s.id) for s in self._sessions.values()]
        self._deadlines = [entry for entry in entries if entry[0] < math.inf]
        heapq.heapify(self._deadlines)
