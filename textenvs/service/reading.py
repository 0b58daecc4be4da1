"""Reading commands off the event loop, with a time limit per request.

A scenario parser that is slow on some input (a pattern that backtracks over user text,
say) must not freeze every other tenant: a regular expression holds the GIL for as long
as it runs, so a worker thread is not enough for a long command. So:

- a short command (at most `THREAD_MAX_CHARS` characters after NFKC, the parsers' first
  step) is read in a worker thread: even a quadratic parser is fast on it;
- a longer one is read in a worker process (the session's env is pickled with it, as
  some parsers read the state's valid commands), at most one at a time per client, so
  one client's flood holds at most one worker and the others keep the rest;
- a command a worker process has not read within `timeout` seconds (counted from when a
  ready worker has it) is a `422 command_too_slow` that changes nothing; the worker is
  killed and replaced;
- a worker that dies with a command (killed from outside, say) is replaced and the
  command tried once more on a new one; a second loss is a `422 command_not_read` that
  changes nothing, never a 500. (A short command has no limit: it is quick to read, and under load
  its wait for a thread would count against it.)

The env then steps on the loop with the parse already done (`step_parsed`): the rules
themselves take microseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import subprocess
import sys
import unicodedata
from collections.abc import Callable
from typing import Any, BinaryIO

from textenvs.core.parsing import ParseError
from textenvs.service.sessions import ServiceError

THREAD_MAX_CHARS = 256
DEFAULT_TIMEOUT_S = 2.0
# (True, action) or (False, (reason, valid, suggestions)) of a ParseError: an exception
# would not pickle back with its fields.
Outcome = tuple[bool, Any]
READY = b"ready\n"
ATTEMPTS = 2  # workers tried for one command: a worker killed from outside is replaced


class WorkerLost(Exception):
    """A worker process died (or did not start) while it had a command."""


def read(parse: Callable[[str], Any], text: str) -> Outcome:
    try:
        return True, parse(text)
    except ParseError as exc:
        return False, (exc.reason, exc.valid, exc.suggestions)


def step_parsed(env: Any, outcome: Outcome) -> tuple[str, float, bool, bool, dict]:
    """`env.step(text)` with `outcome` as what its parser read from `text` (no parsing
    here)."""
    parsed = outcome[1] if outcome[0] else ParseError(*outcome[1])
    return env.unwrapped.step_read(parsed)


def serve_pipes() -> None:
    """A worker process: read (bound parse method, text) pickles from stdin, answer each
    with its `Outcome` on stdout, until stdin closes."""
    from textenvs.core import registry

    for name in registry.names():  # import every scenario before saying it is ready
        registry.get(name).load()
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    sink.write(READY)
    sink.flush()
    while True:
        try:
            parse, text = _receive(source)
        except EOFError:
            return
        _send(sink, read(parse, text))


def _send(pipe: BinaryIO, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(len(data).to_bytes(8, "big") + data)
    pipe.flush()


def _receive(pipe: BinaryIO) -> Any:
    head = pipe.read(8)
    if len(head) < 8:
        raise EOFError
    data = pipe.read(int.from_bytes(head, "big"))
    return pickle.loads(data)


class _Worker:
    """A Python process of its own (not multiprocessing's spawn, which would run the
    caller's main module again), reading over its stdin and stdout."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(
            # niced from the start: the server's own work (other clients) comes first
            [sys.executable, "-c", "import os; os.nice(10); "
             "from textenvs.service.reading import serve_pipes; serve_pipes()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
        )  # fmt: skip
        assert self.process.stdout is not None
        if self.process.stdout.read(len(READY)) != READY:  # started and imported: ready
            self.kill()
            raise RuntimeError("a command-reading worker process failed to start")

    def exchange(self, parse: Callable[[str], Any], text: str) -> Outcome:
        assert self.process.stdin is not None and self.process.stdout is not None
        _send(self.process.stdin, (parse, text))
        return _receive(self.process.stdout)  # type: ignore[no-any-return]

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(5)
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class CommandReader:
    """Reads commands in worker threads and processes (see the module docstring)."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT_S, processes: int = 2) -> None:
        if not timeout > 0 or processes < 1:
            raise ValueError("the reading time limit and worker count must be positive")
        self.timeout = timeout
        self.processes = processes
        self._idle: list[_Worker] = []
        self._slots: asyncio.Semaphore | None = None
        # client -> (its lock, requests holding or waiting for it): one at a time each
        self._per_client: dict[str, tuple[asyncio.Lock, int]] = {}

    async def read(self, client: str, env: Any, text: str) -> Outcome:
        parse = env.unwrapped.parse
        if len(unicodedata.normalize("NFKC", text)) <= THREAD_MAX_CHARS:
            # No time limit here: a short command is quick to read, and under load the
            # wait for a thread would count against it.
            return await asyncio.to_thread(read, parse, text)
        lock, users = self._per_client.get(client, (asyncio.Lock(), 0))
        self._per_client[client] = (lock, users + 1)
        try:
            async with lock:
                return await self._in_process(parse, text)
        finally:
            lock, users = self._per_client[client]
            if users > 1:
                self._per_client[client] = (lock, users - 1)
            else:
                del self._per_client[client]

    async def _in_process(self, parse: Callable[[str], Any], text: str) -> Outcome:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.processes)
        async with self._slots:
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    return await self._exchange(parse, text)
                except WorkerLost:
                    if attempt == ATTEMPTS:
                        raise self._lost() from None
        raise AssertionError("unreachable")

    async def _exchange(self, parse: Callable[[str], Any], text: str) -> Outcome:
        """One try on one worker: a `WorkerLost` when the worker died on the way (killed
        from outside, or it could not start), after which it is gone."""
        try:
            worker = self._idle.pop() if self._idle else await asyncio.to_thread(_Worker)
        except (OSError, RuntimeError) as exc:
            raise WorkerLost from exc
        try:
            outcome = await asyncio.wait_for(
                asyncio.to_thread(worker.exchange, parse, text), self.timeout
            )
        except TimeoutError:
            # stuck: killed (off the loop), and a new worker starts when one is needed
            await asyncio.to_thread(worker.kill)
            raise self._too_slow() from None
        except (EOFError, OSError, pickle.UnpicklingError) as exc:  # its pipes broke
            await asyncio.to_thread(worker.kill)
            raise WorkerLost from exc
        except BaseException:  # cancelled, or the worker broke: it cannot be reused
            worker.kill()
            raise
        self._idle.append(worker)
        return outcome

    def _lost(self) -> ServiceError:
        return ServiceError(
            422,
            "command_not_read",
            "the command could not be read (its reading process stopped); nothing changed: "
            "send it again, or send one short command",
        )

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
