"""Who plays on the page and what they work through: player names, baseline sets and the
run folder each player's episodes go to (see `record.py`)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from textenvs.episodes.specs import parse_seeds
from textenvs.service.tenancy import ANONYMOUS

NAME_PATTERN = r"^[A-Za-z0-9_-]{1,40}$"  # player and set names: safe as folder names
FREE = "free"  # the run of seeds the player chose
MAX_SET_SEEDS = 10_000


class BaselineSetError(ValueError):
    """A `NAME=SEEDS` baseline set that cannot be used."""


@dataclass(frozen=True)
class BaselineSet:
    name: str
    seeds: tuple[int, ...]
    spec: str  # as given, e.g. "0-9" (the eval's `seeds` entry)


def parse_baseline_set(text: str) -> BaselineSet:
    """`"pilot=0-9"` -> the set `pilot` of seeds 0..9 (seed ranges as in `--seeds`)."""
    name, sep, spec = text.partition("=")
    name = name.strip().lower()
    if not sep or not re.fullmatch(NAME_PATTERN, name) or name == FREE:
        raise BaselineSetError(
            f"bad baseline set '{text}': use NAME=SEEDS, e.g. pilot=0-9 (NAME of letters, "
            f"digits, - and _, not '{FREE}')"
        )
    try:
        seeds = parse_seeds(spec)
    except ValueError as exc:
        raise BaselineSetError(f"bad baseline set '{text}': {exc}") from None
    if not seeds or len(seeds) > MAX_SET_SEEDS:
        raise BaselineSetError(f"bad baseline set '{text}': give 1 to {MAX_SET_SEEDS} seeds")
    return BaselineSet(name, tuple(seeds), spec.strip())


@dataclass(frozen=True)
class Player:
    name: str  # chosen by the player, lower case
    client: str  # the credential the page used (`anonymous` without tokens)
    baseline: BaselineSet | None

    @property
    def run(self) -> str:
        """The run folder, relative to the recording root."""
        run = f"{self.baseline.name if self.baseline else FREE}-{self.name}"
        return run if self.client == ANONYMOUS else f"{client_folder(self.client)}/{run}"


def client_folder(client: str) -> str:
    """A client's folder name: its name when that is a safe folder name, else a digest."""
    if re.fullmatch(NAME_PATTERN, client) and client not in (FREE, ANONYMOUS):
        return client
    return "client-" + hashlib.sha256(client.encode("utf-8")).hexdigest()[:16]
