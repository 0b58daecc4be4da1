"""One eval run on disk, crash-safe and resumable (its files: `run_folder.py`).

A line reaches `episodes.jsonl` only after its trajectory file is in place, so every
recorded episode has its turns. A SIGKILL can leave at most one torn (newline-less)
last line; `open_for_append` cuts it away before anything else is written.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from textenvs.episodes.protocol import AGENT_ERROR
from textenvs.evals import trials
from textenvs.evals.metrics import Key, Record, key_of
from textenvs.evals.run_folder import CONFIG, DROPPED, EPISODES, LOCK, TRAJECTORIES

try:
    import fcntl
except ImportError:  # not POSIX: runs are not locked
    fcntl = None  # type: ignore[assignment]

# Config entries that may change between a run and its resume (they do not change
# what an episode is): top-level keys, and the embedded model's threads wherever recorded.
VOLATILE_CONFIG_KEYS = frozenset(
    {"created_at", "concurrency", "command", "env_url", "session_label"}
)
VOLATILE_CONFIG_LEAVES = frozenset({"local_threads"})


def _volatile(key: str) -> bool:
    parts = key.split(".")
    return parts[0] in VOLATILE_CONFIG_KEYS or parts[-1] in VOLATILE_CONFIG_LEAVES


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp creates 0600 files; results are meant to be shared like any written file.
FILE_MODE = 0o666 & ~_umask()


class RunDirError(Exception):
    """The run directory cannot be used as asked (config mismatch, corrupt file...)."""


def stem(env: str, seed: int, episode: int) -> str:
    return f"{env}-{seed}-{episode}"


def write_atomic(path: Path, text: str) -> None:
    """Temp file in the same directory + fsync + rename: readers see old or new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """`{"a": {"b": 1}}` -> `{"a.b": 1}` (lists stay whole), for naming config differences."""
    if not isinstance(data, dict):
        return {prefix: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def config_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The dotted keys whose values differ (volatile entries ignored)."""
    a = {k: v for k, v in flatten(old).items() if not _volatile(k)}
    b = {k: v for k, v in flatten(new).items() if not _volatile(k)}
    return sorted(k for k in a.keys() | b.keys() if a.get(k, object()) != b.get(k, object()))


# What every run's config.json holds (a report or a resume needs them).
REQUIRED_CONFIG_KEYS = ("envs", "seed_list", "episodes_per_seed", "agent")


def read_config(run_dir: Path) -> dict[str, Any] | None:
    """The run's configuration, None when there is none; `RunDirError` when unreadable."""
    path = run_dir / CONFIG
    if not path.exists():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunDirError(f"{path} cannot be read ({exc})") from None
    missing = [k for k in REQUIRED_CONFIG_KEYS if not isinstance(config, dict) or k not in config]
    if missing:
        raise RunDirError(
            f"{path} is not a textenvs run configuration (missing: {', '.join(missing)}); "
            "give a folder 'textenvs eval --out' wrote"
        )
    return config


def planned_keys(config: dict[str, Any]) -> set[Key]:
    """Every (env, seed, episode) the run in `config` plays."""
    return {
        (env, seed, k)
        for env in config["envs"]
        for seed in config["seed_list"]
        for k in range(config["episodes_per_seed"])
    }


def read_episodes(run_dir: Path, *, repair: bool = False) -> list[Record]:
    """Every complete line of `episodes.jsonl`. A torn last line (no newline: the writer
    was killed mid-write) is ignored, or cut from the file when `repair` is set. A bad
    line in the middle is corruption and raises `RunDirError`."""
    path = run_dir / EPISODES
    if not path.exists():
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1  # everything after the last newline is torn
    if repair and end < len(data):
        with open(path, "r+b") as f:
            f.truncate(end)
            f.flush()
            os.fsync(f.fileno())
    records: list[Record] = []
    for number, line in enumerate(data[:end].splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise RunDirError(f"{path}: line {number} is not valid JSON ({exc})") from None
    return records


def check_run_dir(run_dir: Path, holding: str) -> None:
    """`RunDirError` unless `run_dir` is a folder holding the file `holding` (CONFIG,
    EPISODES): the commands that read runs say the same of a folder that is not one."""
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such folder; give a folder 'textenvs eval --out' wrote")
    if not (run_dir / holding).is_file():
        raise RunDirError(
            f"{run_dir} is not an eval run (no {holding}); give a folder 'textenvs eval "
            "--out' wrote"
        )


def has_torn_line(run_dir: Path) -> bool:
    """Whether `episodes.jsonl` ends in a line cut short (no newline after it), the line
    `read_episodes` leaves out."""
    path = run_dir / EPISODES
    if not path.is_file() or path.stat().st_size == 0:
        return False
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


class EpisodeLog:
    """Appends episode records; each `append` is written, flushed and (via `sync`) fsynced."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / EPISODES
        self._file = open(self.path, "ab")  # noqa: SIM115 (kept open for the whole run)

    def append(self, record: Record) -> None:
        # One write call per line: a kill leaves either the whole line or a torn tail.
        self._file.write(record_line(record))
        self._file.flush()

    def sync(self) -> None:
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


class RunLock:
    """One writer per run directory: an advisory `flock` on `DIR/.lock`, held for the
    whole run. The kernel drops the lock when its holder exits, however it dies, so a lock
    left by a killed process is simply taken over; the file's text (pid, host, start time)
    names the holder for the error message and is emptied on a clean release."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK
        self._file: Any = None
        #: who held the lock before us without releasing it (a killed run), if anyone
        self.previous_holder: dict[str, Any] | None = None

    def acquire(self) -> None:
        _make_run_dir(self.path.parent)
        try:
            self._file = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 (held for the run)
        except OSError as exc:
            raise _unwritable(self.path.parent, exc) from None
        if fcntl is None:
            return
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(self._file)
            self._file.close()
            who = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}" if holder else "?"
            since = f", since {holder['started_at']}" if holder.get("started_at") else ""
            raise RunDirError(
                f"{self.path.parent} is in use by another textenvs run ({who}{since}); "
                "wait for it to finish (or stop it) first"
            ) from None
        self.previous_holder = _holder(self._file) or None
        self._file.seek(0)
        self._file.truncate()
        started = datetime.now(UTC).isoformat(timespec="seconds")
        self._file.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                     "started_at": started}))  # fmt: skip
        self._file.flush()

    def release(self) -> None:
        if self._file is None:
            return
        self._file.seek(0)
        self._file.truncate()  # an empty lock file: released cleanly
        self._file.close()  # closing drops the flock
        self._file = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(file: Any) -> dict[str, Any]:
    file.seek(0)
    try:
        data = json.loads(file.read() or "{}")
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _make_run_dir(run_dir: Path) -> None:
    """`run_dir` created if needed; a clear `RunDirError` when it cannot be."""
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"{run_dir} is a file, not a run directory; choose another --out")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(run_dir, exc) from None


def _unwritable(run_dir: Path, exc: OSError) -> RunDirError:
    """Names the path at fault: a folder that cannot be made under /proc or under a
    file says "No such file or directory" or "Not a directory" of itself, where the
    fault is its parent's."""
    reason = exc.strerror or str(exc)
    existing = next((p for p in run_dir.absolute().parents if p.exists()), None)
    if existing is not None and not existing.is_dir():
        reason = f"{existing} is a file, not a folder"
    elif exc.errno == errno.ENOENT and existing is not None:
        reason = f"{existing} takes no new folders ({reason})"
    return RunDirError(
        f"cannot write the run directory {run_dir}: {reason}; choose an --out you can write"
    )


def prepare(
    run_dir: Path, config: dict[str, Any], *, resume: bool, retry_errors: bool = False
) -> set[Key]:
    """Make `run_dir` ready for `config`; returns the keys already done (when resuming).
    Call it holding the `RunLock`.

    Refuses to mix runs: a resume whose config differs names the differing keys, and a
    fresh run refuses a directory that already holds episodes. A resume keeps one line
    per (env, seed, episode); with `retry_errors` it also takes out the agent errors, so
    they are played again.
    """
    _make_run_dir(run_dir)
    old = read_config(run_dir)
    done: set[Key] = set()
    if resume:
        if old is not None:
            diff = config_differences(old, config)
            if diff:
                raise RunDirError(
                    f"{run_dir} was run with a different configuration; differing keys: "
                    + ", ".join(diff)
                    + ". Use a new --out directory (or rerun with the original options)."
                )
        records = read_episodes(run_dir, repair=True)
        # trial mode: a group is played whole or again from its first trial
        replay = trials.unfinished_groups(config, records)
        if retry_errors:
            replay |= trials.groups_with_errors(config, records)
        kept = _compact(
            run_dir,
            records,
            lambda r: key_of(r) in replay or (retry_errors and _is_error(r)),
        )
        done = {key_of(r) for r in kept}
    elif old is not None or read_episodes(run_dir):
        raise RunDirError(
            f"{run_dir} already holds a run; pass --resume to continue it or choose a new --out"
        )
    for leftover in run_dir.glob("**/.*.tmp"):  # temp files of a killed atomic write
        leftover.unlink(missing_ok=True)
    (run_dir / TRAJECTORIES).mkdir(exist_ok=True)
    if old is None or not resume:
        write_json_atomic(run_dir / CONFIG, config)
    return done


def _compact(run_dir: Path, records: list[Record], drop: Callable[[Record], bool]) -> list[Record]:
    """Keep one record per key (a scored one over an agent error) and none that `drop`
    picks; the rest move to `dropped.jsonl` and `episodes.jsonl` is rewritten atomically."""
    chosen: dict[Key, int] = {}
    for i, record in enumerate(records):
        first = chosen.setdefault(key_of(record), i)
        if _is_error(records[first]) and not _is_error(record):
            chosen[key_of(record)] = i
    keep = {i for i in chosen.values() if not drop(records[i])}
    if len(keep) == len(records):
        return records
    kept = [r for i, r in enumerate(records) if i in keep]
    dropped = [r for i, r in enumerate(records) if i not in keep]
    with open(run_dir / DROPPED, "ab") as f:
        f.write(b"".join(record_line(r) for r in dropped))
        f.flush()
        os.fsync(f.fileno())
    write_atomic(run_dir / EPISODES, "".join(record_line(r).decode() for r in kept))
    return kept


def _is_error(record: Record) -> bool:
    return record.get("outcome") == AGENT_ERROR


def record_line(record: Record) -> bytes:
    """The `episodes.jsonl` line of `record`, newline included."""
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def trajectory_file(key: Key) -> str:
    """Where an episode's turns are stored, relative to the run directory."""
    return f"{TRAJECTORIES}/{stem(*key)}.json"


def trajectory_text(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))


def write_trajectory(run_dir: Path, key: Key, data: dict[str, Any]) -> str:
    """Store one episode's turns; returns its path relative to the run directory."""
    rel = trajectory_file(key)
    write_atomic(run_dir / rel, trajectory_text(data))
    return rel


def read_turns(run_dir: Path, record: Record) -> list[dict[str, Any]]:
    """The turns of a recorded episode (`record`, a line of the run's `episodes.jsonl`)."""
    return json.loads((run_dir / record["trajectory"]).read_text())["turns"]


def command_read(turn: dict[str, Any]) -> str | None:
    """The command a recorded turn's reply was read as; None where no reader read it (the
    turn was wasted, and its `command` field holds the reply's text, if any)."""
    return None if turn["invalid_action"] or not turn["command"] else turn["command"]
