"""Turns between clients: each client starts at most one request (or WebSocket message)
per turn of the event loop.

The loop answers whatever is ready in arrival order, so a client with 64 connections had
64 requests answered for each one of a client with one: flooding cheap reads
(`GET /v1/envs`) from 64 connections raised another client's p50 from 3 ms to 2.9 s.
Here a client's second request waits for the loop's next turn (a callback queued behind
everything ready now), and so on: clients take turns, whatever their connection counts.
A client alone loses nothing measurable (a turn of an idle loop takes microseconds).
Nothing is held while a request runs, so no request can wait on another for its turn.
"""

from __future__ import annotations

import asyncio
from collections import deque


class Turns:
    def __init__(self) -> None:
        self._started: set[str] = set()  # clients that started a request this turn
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}
        self._ticking = False

    async def take(self, client: str) -> None:
        """Returns when `client` may start its next request."""
        if client not in self._started and client not in self._waiting:
            self._started.add(client)
            self._tick_later()
            return
        waiting = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(client, deque()).append(waiting)
        await waiting  # cancelled: the next turn skips it

    def _tick_later(self) -> None:
        if not self._ticking:
            self._ticking = True
            asyncio.get_running_loop().call_soon(self._tick)

    def _tick(self) -> None:
        """A new turn: each waiting client starts its next request."""
        self._ticking = False
        self._started.clear()
        for client in list(self._waiting):
            queue = self._waiting[client]
            while queue and queue[0].done():  # cancelled meanwhile
                queue.popleft()
            if queue:
                queue.popleft().set_result(None)
                self._started.add(client)
            if not queue:
                del self._waiting[client]
        if self._started:
            self._tick_later()
