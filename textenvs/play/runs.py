"""What the recorder knows of its run folders without re-reading them on every request.

- `RunIndex`: the (scenario, seed) keys each run's `episodes.jsonl` holds, read once and
  then only from where the last read stopped (the file is append-only; a file replaced
  or cut short, by a resume's compaction say, is read again from the start). A request
  costs one `stat` when nothing changed, and the reading is done in a worker thread.
- `DiskQuota`: how much the recordings take on disk, per client and in all, counted
  once from the folders (in a thread, the first time a client records) and then kept up
  to date by every write (files in whole blocks, a run folder's small files counted when
  it is made); a write that would go over a bound is refused before it is made.
- `FileThreads`: the recorder's own threads for its file work. The event loop's default
  threads read commands (`textenvs/service/reading.py`): episodes written and fsynced
  there could hold them all on a slow disk, and every client's steps would wait.
"""

from __future__ import annotations

import asyncio
import functools
import json
import multiprocessing
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from textenvs.evals import run_folder
from textenvs.service.sessions import ServiceError

DEFAULT_MAX_MB = 1024  # all recordings together, unless `--record-max-mb` says otherwise
BLOCK = 4096  # what a file or folder takes at least on most file systems
# a new run folder: itself, trajectories/, config.json, .lock and summary.json (under 8 KB
# with every scenario in it, so its rewrites are not counted again)
RUN_FOLDER_BYTES = 6 * BLOCK


T = TypeVar("T")
LINE_HEAD = re.compile(rb'\{"env":"([A-Za-z0-9_-]+)","seed":(\d+),')


class FileThreads:
    """A small thread pool of the recorder's own (see the module docstring)."""

    def __init__(self, threads: int = 2) -> None:
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="textenvs-record")

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(work, *args))

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class ReplayProcess(FileThreads):
    """A process of the recorder's own, for replaying and encoding finished episodes:
    work that holds the interpreter lock (tens of milliseconds a Megacity episode), so in
    the server's threads it took the CPU the event loop needed (one client finishing
    recorded episodes raised another's p50 x3.1 on a quiet machine, x572 on a loaded
    one); in a process the OS shares the CPU instead. Started at once (spawned: the
    server has threads), so the first episode does not wait for its imports; a script
    of one's own that serves a recording app needs the usual `if __name__ == "__main__"`
    guard (spawn imports the main module again; `textenvs serve` has it)."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._pool = ProcessPoolExecutor(  # type: ignore[assignment]
            1, mp_context=context, initializer=replay_process_start, initargs=(os.getpid(),)
        )
        self._pool.submit(int)  # starts the process now


PARENT_CHECK_S = 1.0


def replay_process_start(server_pid: int) -> None:
    """Niced, so the server's own work (every client's requests) comes first; and gone
    within a second when the server is: a worker holds its own queue's writing end, so
    it never reads an end of file, and a server killed with -9 left it running for good."""
    os.nice(10)

    def exit_when_orphaned() -> None:
        while os.getppid() == server_pid:
            time.sleep(PARENT_CHECK_S)
        os._exit(0)

    threading.Thread(target=exit_when_orphaned, daemon=True, name="textenvs-orphan").start()


def footprint(size: int) -> int:
    """Bytes a file of `size` bytes takes on disk (whole blocks)."""
    return -(-size // BLOCK) * BLOCK


@dataclass
class RecordedEpisodes:
    """The episodes one run has recorded: how many of each (scenario, seed)."""

    counts: Counter[tuple[str, int]] = field(default_factory=Counter)
    seeds: dict[str, set[int]] = field(default_factory=dict)  # scenario -> seeds
    size: int = 0  # of episodes.jsonl when last read
    progress: bytes | None = None  # the progress answer, made once per change
    _identity: tuple[int, int] = (0, 0)  # (device, inode) of the file read
    _offset: int = 0  # bytes read so far (whole lines)
    _reading: asyncio.Lock = field(default_factory=asyncio.Lock)

    def add(self, keys: list[tuple[str, int]]) -> None:
        self.counts.update(keys)
        for env, seed in keys:
            self.seeds.setdefault(env, set()).add(seed)
        self.progress = None


class RunIndex:
    def __init__(self, threads: FileThreads) -> None:
        self._threads = threads
        self._runs: dict[Path, RecordedEpisodes] = {}

    async def episodes(self, run_dir: Path) -> RecordedEpisodes:
        """What `run_dir` holds now (an empty record when it holds nothing yet)."""
        path = run_dir / run_folder.EPISODES
        try:
            stat = os.stat(path)
        except OSError:
            return RecordedEpisodes()
        known = self._runs.setdefault(run_dir, RecordedEpisodes())
        async with known._reading:
            identity = (stat.st_dev, stat.st_ino)
            if identity == known._identity and stat.st_size == known.size:
                return known
            if identity != known._identity or stat.st_size < known._offset:
                known.counts.clear()
                known.seeds.clear()
                known._offset = 0
            keys, read = await self._threads.run(_keys_from, path, known._offset)
            known.add(keys)
            known._identity, known.size = identity, stat.st_size
            known._offset += read
        return known


def _keys_from(path: Path, offset: int) -> tuple[list[tuple[str, int]], int]:
    """The (env, seed) of each whole line after `offset`, and the bytes those lines take
    (a torn last line, no newline yet, is left for later). Unreadable lines are skipped:
    the index only counts what can be counted."""
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    data = data[: data.rfind(b"\n") + 1]
    keys = []
    for line in data.splitlines():
        head = LINE_HEAD.match(line)  # how `episode_record` lines begin: no JSON parse
        if head is not None:
            keys.append((head[1].decode(), int(head[2])))
            continue
        try:
            record = json.loads(line)
            keys.append((str(record["env"]), int(record["seed"])))
        except (ValueError, KeyError, TypeError):
            continue
    return keys, len(data)


class DiskQuota:
    """At most `total` bytes of recordings on disk, and `per_client` for each client (0:
    `total` shared evenly between the server's clients, see `share`). A bound is reached
    once something did not fit under it: from then on the client (or everyone, for the
    total) is refused new recorded games, rather than play episodes that cannot be kept."""

    def __init__(self, threads: FileThreads, total: int, per_client: int = 0) -> None:
        self._threads = threads
        self.total = total
        self.per_client = per_client or total
        self._explicit = bool(per_client)
        self._used: dict[str, int] = {}  # client -> bytes, counted from its folder first
        self._all: int | None = None
        self._full: set[str] = set()  # clients at their bound
        self._all_full = False
        self._counting = asyncio.Lock()

    def share(self, clients: int) -> None:
        """`total` split evenly between `clients`, unless a per-client bound was given."""
        if not self._explicit:
            self.per_client = max(1, self.total // max(1, clients))

    async def room(self, client: str, folder: Path, root: Path) -> None:
        """A `409 recording_full` unless `client` (whose runs are under `folder`) and the
        server (`root`) are both under their bounds."""
        if client not in self._used or self._all is None:
            async with self._counting:  # walked once, off the event loop
                if self._all is None:
                    self._all = await self._threads.run(disk_usage, root)
                if client not in self._used:
                    self._used[client] = await self._threads.run(disk_usage, folder)
        if client in self._full or self._all_full or not self.take(client, 0):
            raise self.full(client)

    def take(self, client: str, size: int) -> bool:
        """Count `size` more bytes for `client` if they fit; False (nothing counted, and
        the bound reached) if not."""
        used, everyone = self._used.get(client, 0), self._all or 0
        if used + size > self.per_client:
            self._full.add(client)
            return False
        if everyone + size > self.total:
            self._all_full = True
            return False
        self._used[client] = used + size
        self._all = everyone + size
        return True

    def full(self, client: str) -> ServiceError:
        """The refusal for `client`, naming the bound it reached."""
        mine = client in self._full
        limit = self.per_client if mine else self.total
        whose = "this client's recorded runs" if mine else "the recorded runs"
        return ServiceError(
            409,
            "recording_full",
            f"{whose} have reached {_megabytes(limit)}, the most this server keeps "
            "(--record-client-max-mb, --record-max-mb): nothing more is recorded; "
            "play unrecorded, or ask the operator to make room",
        )


def _megabytes(size: int) -> str:
    return f"{size // 2**20} MB" if size >= 2**20 else f"{size // 2**10} KB"


def disk_usage(path: Path) -> int:
    """What the files and folders under `path` take, counted as `DiskQuota` counts."""
    total = 0
    for folder, dirs, files in os.walk(path):
        total += BLOCK * len(dirs)
        for name in files:
            try:
                total += footprint(os.stat(os.path.join(folder, name)).st_size)
            except OSError:
                continue
    return total
