"""Recorded play is per client (issue 30): a client reads and writes only its own
players' runs, and a flood of rejected requests makes no folder and holds no file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.web.conftest import PILOT_SEEDS, reference_episode
from textenvs.play.page import create_app
from textenvs.play.players import parse_baseline_set
from textenvs.play.record import HumanRecorder
from textenvs.service.background import serve_in_thread
from textenvs.service.tenancy import ClientLimits

TOKENS = {"alice": "alice-token-0123456789", "mallory": "mallory-token-0123456789"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    recorder = HumanRecorder(tmp_path, [parse_baseline_set("pilot=3-4")])
    app = create_app(
        tokens=TOKENS,
        recorder=recorder,
        limits=ClientLimits(max_sessions=2),
        refusal_pause=0.1,  # the pause is not what these tests test
    )
    with serve_in_thread(app) as url:
        yield url, tmp_path


def client(url: str, name: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {TOKENS[name]}"}
    return httpx.Client(base_url=url, headers=headers, timeout=30)


def test_a_client_sees_and_uses_only_its_own_runs(served: tuple[str, Path]) -> None:
    url, root = served
    env = "treasure-hunt"
    with client(url, "alice") as alice, client(url, "mallory") as mallory:
        session = alice.post(
            "/play/api/sessions", json={"env": env, "player": "ada", "set": "pilot"}
        )
        assert session.status_code == 201 and session.json()["seed"] == PILOT_SEEDS[0]
        sid = session.json()["session_id"]
        for turn in reference_episode(env, PILOT_SEEDS[0]).turns:
            step = alice.post(f"/v1/sessions/{sid}/step", json={"command": turn.command})
            assert step.status_code == 200
        mine = alice.get("/play/api/progress", params={"player": "ada", "set": "pilot"}).json()
        assert mine["recorded"] == {env: [PILOT_SEEDS[0]]}
        # Mallory uses the same player name: her own run, nothing of Alice's in it
        theirs = mallory.get("/play/api/progress", params={"player": "ada", "set": "pilot"})
        assert theirs.json()["recorded"] == {}
        other = mallory.post(
            "/play/api/sessions", json={"env": env, "player": "ada", "set": "pilot"}
        )
        assert other.status_code == 201 and other.json()["seed"] == PILOT_SEEDS[0]
        assert other.json()["recording"]["run"] != session.json()["recording"]["run"]
    assert (root / "alice" / "pilot-ada" / "episodes.jsonl").exists()
    assert not (root / "mallory" / "pilot-ada" / "episodes.jsonl").exists()
    assert not (root / "pilot-ada").exists()


@pytest.mark.slow
def test_rejected_requests_make_no_folder_and_hold_no_file(served: tuple[str, Path]) -> None:
    url, root = served
    with client(url, "mallory") as mallory:
        for name in ("one", "two"):  # her whole session allowance
            assert mallory.post(
                "/play/api/sessions", json={"env": "megacity", "player": name}
            ).is_success
        before = set(root.rglob("*")), len(os.listdir("/proc/self/fd"))
        for i in range(8):  # each is answered after the 429 pause
            answer = mallory.post("/play/api/sessions", json={"env": "megacity", "player": f"p{i}"})
            assert answer.status_code == 429
        # no folder made, no file held (a refused body's connection closes: fewer is fine)
        assert set(root.rglob("*")) == before[0]
        assert len(os.listdir("/proc/self/fd")) <= before[1]
