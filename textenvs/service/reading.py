"""Reading commands off the event loop, with a time limit per request.

A scenario parser that is slow on some input (a pattern that backtracks over user text,
say) must not freeze every other tenant: a regular expression holds the GIL for as long
as it runs, so a worker thread is not enough for a long command. So:

- a short command (at most `THREAD_MAX_CHARS` characters after NFKC, the parsers' first
  step) is read in a worker thread: even a quadratic parser is fast on it;
- a longer one is read in a worker process (the session's env is pickled with it, as
  some parsers read the state's valid commands), at most one at a time per client, so
  one client's flood holds at most one worker and the others keep the rest;
- either way a command not read within `timeout` seconds is a `422 command_too_slow`
  that changes nothing (a stuck worker process is killed and replaced).

The env then steps on the loop with the parse already done (`step_parsed`): the rules
themselves take microseconds.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import unicodedata
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from textenvs.core.parsing import ParseError
from textenvs.service.sessions import ServiceError

THREAD_MAX_CHARS = 256
DEFAULT_TIMEOUT_S = 2.0
# (True, action) or (False, (reason, valid, suggestions)) of a ParseError: an exception
# would not pickle back with its fields.
Outcome = tuple[bool, Any]


def read(parse: Callable[[str], Any], text: str) -> Outcome:
    try:
        return True, parse(text)
    except ParseError as exc:
        return False, (exc.reason, exc.valid, exc.suggestions)


def step_parsed(env: Any, text: str, outcome: Outcome) -> tuple[str, float, bool, bool, dict]:
    """`env.step(text)` with `outcome` as what its parser read (no parsing here)."""
    target = env.unwrapped  # the scenario env under any wrapper

    def parsed(_: str) -> Any:
        if outcome[0]:
            return outcome[1]
        raise ParseError(*outcome[1])

    target.parse = parsed  # an instance attribute shadows the method for this one step
    try:
        return env.step(text)
    finally:
        del target.parse


def _serve(conn: Connection) -> None:
    """A worker process: read (bound parse method, text) pairs until the pipe closes."""
    while True:
        try:
            parse, text = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(read(parse, text))


class _Worker:
    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")  # safe from a threaded server
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True)
        self.process.start()
        child.close()

    def exchange(self, parse: Callable[[str], Any], text: str) -> Outcome:
        self.conn.send((parse, text))
        return self.conn.recv()  # type: ignore[no-any-return]

    def kill(self) -> None:
        self.process.kill()
        self.conn.close()
        self.process.join(5)


class CommandReader:
    """Reads commands in worker threads and processes (see the module docstring)."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_S, processes: int = 2) -> None:
        if not timeout > 0 or processes < 1:
            raise ValueError("the reading time limit and worker count must be positive")
        self.timeout = timeout
        self.processes = processes
        self._idle: list[_Worker] = []
        self._slots: asyncio.Semaphore | None = None
        self._per_client: dict[str, asyncio.Lock] = {}

    async def read(self, client: str, env: Any, text: str) -> Outcome:
        parse = env.unwrapped.parse
        if len(unicodedata.normalize("NFKC", text)) <= THREAD_MAX_CHARS:
            reading = asyncio.to_thread(read, parse, text)
            try:
                return await asyncio.wait_for(reading, self.timeout)
            except TimeoutError:  # the thread finishes on its own; its result is dropped
                raise self._too_slow() from None
        lock = self._per_client.setdefault(client, asyncio.Lock())
        try:
            async with lock:
                return await self._in_process(parse, text)
        finally:
            if not lock.locked() and self._per_client.get(client) is lock:
                del self._per_client[client]

    async def _in_process(self, parse: Callable[[str], Any], text: str) -> Outcome:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.processes)
        async with self._slots:
            worker = self._idle.pop() if self._idle else await asyncio.to_thread(_Worker)
            try:
                outcome = await asyncio.wait_for(
                    asyncio.to_thread(worker.exchange, parse, text), self.timeout
                )
            except TimeoutError:
                worker.kill()  # stuck: a new worker takes its place when one is needed
                raise self._too_slow() from None
            except BaseException:  # cancelled, or the worker broke: it cannot be reused
                worker.kill()
                raise
            self._idle.append(worker)
            return outcome

    def _too_slow(self) -> ServiceError:
        return ServiceError(
            422,
            "command_too_slow",
            f"the command could not be read within {self.timeout:g} s; send one short command",
        )

    def close(self) -> None:
        for worker in self._idle:
            worker.kill()
        self._idle.clear()
