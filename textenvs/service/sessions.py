"""Server-side sessions: one env per session, a lock each, idle expiry, a capacity limit."""

from __future__ import annotations

import asyncio
import secrets
import time
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
    last_used: float = field(default_factory=time.monotonic)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def touch(self) -> None:
        self.last_used = time.monotonic()


class SessionStore:
    """All live sessions. Only the holder of a session id can reach its session: there is
    deliberately no way to enumerate ids."""

    def __init__(self, max_sessions: int = 1000, idle_timeout: float = 600.0) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.max_sessions = max_sessions
        #: seconds without a request before a session is dropped; 0 disables expiry
        self.idle_timeout = idle_timeout
        self._sessions: dict[str, Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def new_id(self) -> str:
        return secrets.token_urlsafe(24)  # 192 random bits

    def reserve(self) -> None:
        """Raise a 503 when full (after dropping sessions that have expired)."""
        if len(self._sessions) >= self.max_sessions:
            self.reap()
        if len(self._sessions) >= self.max_sessions:
            raise ServiceError(
                503,
                "at_capacity",
                f"the server holds its maximum of {self.max_sessions} sessions; "
                "delete finished sessions or retry later",
                headers={"Retry-After": "1"},
            )

    def add(self, session: Session) -> None:
        self.reserve()
        self._sessions[session.id] = session

    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None or self._expired(session, time.monotonic()):
            if session is not None:
                self._drop(session)
            raise ServiceError(404, "unknown_session", "no such session (or it has expired)")
        return session

    def remove(self, session_id: str) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            raise ServiceError(404, "unknown_session", "no such session (or it has expired)")
        self._drop(session)

    def reap(self) -> int:
        """Drop every expired session; returns how many."""
        now = time.monotonic()
        expired = [s for s in self._sessions.values() if self._expired(s, now)]
        for session in expired:
            self._drop(session)
        return len(expired)

    def clear(self) -> None:
        for session in list(self._sessions.values()):
            self._drop(session)

    async def reap_forever(self) -> None:
        """The idle reaper: runs for the server's lifetime (cancelled at shutdown)."""
        if self.idle_timeout <= 0:
            return
        interval = min(max(self.idle_timeout / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            self.reap()

    def _expired(self, session: Session, now: float) -> bool:
        # A session whose lock is held is mid-request and so not idle.
        return (
            self.idle_timeout > 0
            and now - session.last_used > self.idle_timeout
            and not session.lock.locked()
        )

    def _drop(self, session: Session) -> None:
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]
        session.env.close()
