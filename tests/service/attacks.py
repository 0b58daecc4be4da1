"""Attacks on a real `textenvs serve` process, as the tests make them: the flood in a
process of its own (`benchmarks.service_isolation --flood-only`), a bystander tenant
stepping its own session, and its latency as a ratio to its quiet baseline measured in
the same test (never an absolute time)."""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from benchmarks.isolation_stored_data import FLOODER
from benchmarks.service_load import ROOT

BYSTANDER = "victim-token-0123456789"  # the benchmark's victim
TOKENS = {"victim": BYSTANDER, "flooder": FLOODER}


def token_file(folder: Path, extra: dict[str, str] | None = None) -> Path:
    path = folder / "tokens"
    clients = {**TOKENS, **(extra or {})}
    path.write_text("".join(f"{name} {token}\n" for name, token in clients.items()))
    return path


@dataclass
class Flood:
    requests: int = 0  # sent by the attacker (known once it stopped)


@contextmanager
def flooding(attack: str, url: str) -> Iterator[Flood]:
    """One of `benchmarks.service_isolation.ATTACKS` against `url`, from its own process,
    for as long as the block runs."""
    port = url.rsplit(":", 1)[1]
    flood = Flood()
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.service_isolation", "--flood-only", attack, port],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "started"
        yield flood
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=60)
        flood.requests = int(out.strip() or 0)


@dataclass
class Bystander:
    """Another tenant: steps its own Treasure Hunt session, one request at a time, with a
    short pause between (closed loop: one slow answer does not pile up the next ones)."""

    url: str
    token: str = BYSTANDER
    http: httpx.Client = field(init=False)
    session: str = field(init=False)

    def __post_init__(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=60)
        create = self.http.post("/v1/sessions", json={"env": "treasure-hunt", "seed": 1})
        assert create.status_code == 201, create.text
        self.session = create.json()["session_id"]

    def latencies(self, steps: int = 200) -> list[float]:
        timed = []
        for _ in range(steps):
            started = time.perf_counter()
            answer = self.http.post(f"/v1/sessions/{self.session}/step", json={"command": "wait"})
            timed.append(time.perf_counter() - started)
            if answer.status_code == 409:  # the episode ended: a new one, not timed
                answer = self.http.post(f"/v1/sessions/{self.session}/reset", json={})
            assert answer.status_code == 200, answer.text
            time.sleep(0.005)
        return timed

    def close(self) -> None:
        self.http.close()


@dataclass
class Measured:
    quiet: list[float]  # the bystander's latencies before the attack
    loud: list[float]  # and during it
    flood: Flood
    seconds: float  # how long the flood ran


def under_attack(bystander: Bystander, attack: str, url: str, steps: int = 200) -> Measured:
    quiet = bystander.latencies(steps)
    started = time.monotonic()
    with flooding(attack, url) as flood:
        loud = bystander.latencies(steps)
    return Measured(quiet, loud, flood, time.monotonic() - started)


def attacked(
    bystander: Bystander, attack: str, url: str, holds: Callable[[Measured], bool], tries: int = 2
) -> list[Measured]:
    """`under_attack` until `holds` says the bystander fared well enough, at most `tries`
    times (a loaded machine can spoil one measurement; an attack that works spoils all)."""
    measured = [under_attack(bystander, attack, url)]
    while not holds(measured[-1]) and len(measured) < tries:
        measured.append(under_attack(bystander, attack, url))
    return measured


def p50(values: list[float]) -> float:
    return statistics.median(values)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
