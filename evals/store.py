"""The on-disk layout of one eval run, crash-safe and resumable.

```
DIR/config.json          everything needed to rerun (written atomically)
DIR/episodes.jsonl       one JSON line per finished episode, appended + flushed + fsynced
DIR/trajectories/<env>-<seed>-<episode>.json   every turn of that episode
DIR/summary.json         per-env statistics (written atomically)
DIR/transcripts/*.html   readable transcripts (written by `textenvs report`)
```

A line reaches `episodes.jsonl` only after its trajectory file is in place, so every
recorded episode has its turns. A SIGKILL can leave at most one torn (newline-less)
last line; `open_for_append` cuts it away before anything else is written.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from textenvs.evals.metrics import Key, Record, key_of

CONFIG = "config.json"
EPISODES = "episodes.jsonl"
SUMMARY = "summary.json"
TRAJECTORIES = "trajectories"
TRANSCRIPTS = "transcripts"

# Config entries that may change between a run and its resume (they do not change
# what an episode is).
VOLATILE_CONFIG_KEYS = frozenset({"created_at", "concurrency", "command", "env_url"})


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
    a = {k: v for k, v in flatten(old).items() if k.split(".")[0] not in VOLATILE_CONFIG_KEYS}
    b = {k: v for k, v in flatten(new).items() if k.split(".")[0] not in VOLATILE_CONFIG_KEYS}
    return sorted(k for k in a.keys() | b.keys() if a.get(k, object()) != b.get(k, object()))


def read_config(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / CONFIG
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


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


class EpisodeLog:
    """Appends episode records; each `append` is written, flushed and (via `sync`) fsynced."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / EPISODES
        self._file = open(self.path, "ab")  # noqa: SIM115 (kept open for the whole run)

    def append(self, record: Record) -> None:
        # One write call per line: a kill leaves either the whole line or a torn tail.
        self._file.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")
        self._file.flush()

    def sync(self) -> None:
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def prepare(run_dir: Path, config: dict[str, Any], *, resume: bool) -> set[Key]:
    """Make `run_dir` ready for `config`; returns the keys already done (when resuming).

    Refuses to mix runs: a resume whose config differs names the differing keys, and a
    fresh run refuses a directory that already holds episodes.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
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
        done = {key_of(r) for r in read_episodes(run_dir, repair=True)}
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


def write_trajectory(run_dir: Path, key: Key, data: dict[str, Any]) -> str:
    """Store one episode's turns; returns its path relative to the run directory."""
    rel = f"{TRAJECTORIES}/{stem(*key)}.json"
    write_atomic(run_dir / rel, json.dumps(data, separators=(",", ":")))
    return rel
