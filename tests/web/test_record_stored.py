"""Issue 35's attacks on recorded play, written as an attacker would: polling the
progress of a big run, filling the disk, and kill -9 of the server right after an
episode's last answer. Real sockets, real servers (a `textenvs serve` process where it
is killed or attacked from another process)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.service_attacks_stored import FLOODER, PLAYER, fill_recorded_run
from benchmarks.service_load import serving
from tests.service.attacker import ATTACK_TOKENS, Bystander, attacked, p50, token_file
from tests.web.conftest import read_run
from textenvs.play import record, runs
from textenvs.play.page import create_app
from textenvs.play.record import HumanRecorder
from textenvs.service.background import serve_in_thread
from textenvs.service.tenancy import ClientLimits

TOKENS = {"alice": "alice-token-0123456789", "mallory": "mallory-token-0123456789"}


def client(url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def play(http: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    """A recorded episode of `wait`: the answer of the step that ended it."""
    session = http.post("/play/api/sessions", json=body)
    assert session.status_code == 201, session.text
    return finish(http, session.json()["session_id"])


def finish(http: httpx.Client, sid: str) -> httpx.Response:
    while True:
        step = http.post(f"/v1/sessions/{sid}/step", json={"command": "wait"})
        assert step.status_code == 200, step.text
        if step.json()["terminated"] or step.json()["truncated"]:
            return step


def recorded_seeds(run_dir: Path) -> list[int]:
    path = run_dir / "episodes.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["seed"] for line in lines]


@pytest.mark.slow
def test_an_episode_the_player_saw_end_survives_kill_9(tmp_path: Path) -> None:
    """The server is killed the moment the last answer arrives: the episode is on disk
    already, whole (its trajectory too), and the run resumes on the next server. The
    processes the server started (the recorder's replay process among them) go with it."""
    for seed in (11, 12):
        with (
            serving("--record", str(tmp_path)) as (url, pid),
            httpx.Client(base_url=url, timeout=60) as http,
        ):
            play(http, {"env": "treasure-hunt", "player": "ada", "seed": seed})
            started = children(pid)
            os.kill(pid, signal.SIGKILL)
        assert seed in recorded_seeds(tmp_path / "free-ada")
        assert started  # the replay process at least
        deadline = time.monotonic() + 10 * runs.PARENT_CHECK_S
        while not all(map(ended, started)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(map(ended, started)), [p for p in started if not ended(p)]
    _, records = read_run(tmp_path / "free-ada")
    assert [r["seed"] for r in records] == [11, 12]
    for r in records:
        assert json.loads((tmp_path / "free-ada" / r["trajectory"]).read_text())["turns"]


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux's /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid:
            found.append(int(stat.parent.name))
    return found


def ended(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"  # exited, not yet reaped by whoever adopted it


@pytest.mark.slow
def test_the_summary_is_written_at_most_every_so_often_and_at_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not from every line after every episode (that grew with the run): at most once
    per `SUMMARY_EVERY_S` for a run, and when the server stops."""
    written: list[int] = []
    write_summary = record.write_summary

    def counted(run_dir: Path, config: dict[str, Any]) -> dict[str, Any]:
        summary = write_summary(run_dir, config)
        written.append(summary["recorded_episodes"])
        return summary

    monkeypatch.setattr(record, "write_summary", counted)
    with serve_in_thread(create_app(recorder=HumanRecorder(tmp_path))) as url:
        with httpx.Client(base_url=url, timeout=60) as http:
            for seed in range(3):
                play(http, {"env": "treasure-hunt", "player": "ada", "seed": seed})
        assert written == []  # recorded, each before its last answer; no summary yet
    assert written == [3]
    summary = json.loads((tmp_path / "free-ada" / "summary.json").read_text())
    assert summary["recorded_episodes"] == 3

    monkeypatch.setattr(record, "SUMMARY_EVERY_S", 0.2)
    with (
        serve_in_thread(create_app(recorder=HumanRecorder(tmp_path))) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        play(http, {"env": "megacity", "player": "ada"})
        deadline = time.monotonic() + 30
        while written[-1] != 4 and time.monotonic() < deadline:  # while the server runs
            time.sleep(0.05)
        assert written[-1] == 4


@pytest.mark.slow
def test_the_recording_disk_is_bounded_per_client(tmp_path: Path) -> None:
    """Mallory opens 20 recorded sessions while there is room, then finishes them all:
    what does not fit is not written, and her next recorded game is refused; Alice still
    records."""
    bound = 640 * 1024
    recorder = HumanRecorder(tmp_path, max_bytes=64 * 2**20, client_max_bytes=bound)
    with (
        serve_in_thread(create_app(tokens=TOKENS, recorder=recorder)) as url,
        client(url, TOKENS["mallory"]) as mallory,
        client(url, TOKENS["alice"]) as alice,
    ):
        opened = [
            mallory.post("/play/api/sessions", json={"env": "megacity", "player": "m"})
            for _ in range(20)
        ]
        assert all(session.status_code == 201 for session in opened)
        for session in opened:
            finish(mallory, session.json()["session_id"])
        written = recorded_seeds(tmp_path / "mallory" / "free-m")
        assert 1 <= len(written) < 20  # about 100 KB each
        refused = mallory.post("/play/api/sessions", json={"env": "megacity", "player": "n"})
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "recording_full"
        assert "640 KB" in refused.json()["error"]["message"]  # the bound, named
        assert not (tmp_path / "mallory" / "free-n").exists()  # no folder for a refusal
        assert mallory.post("/v1/sessions", json={"env": "megacity"}).status_code == 201
        play(alice, {"env": "treasure-hunt", "player": "a", "seed": 1})
    assert runs.disk_usage(tmp_path / "mallory") <= bound
    assert recorded_seeds(tmp_path / "alice" / "free-a") == [1]


@pytest.mark.slow
def test_progress_reads_the_run_once_and_counts_against_the_reads_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill_recorded_run(tmp_path, episodes=300, trajectories=False)
    reads: list[int] = []
    keys_from = runs._keys_from
    monkeypatch.setattr(runs, "_keys_from", lambda p, o: reads.append(o) or keys_from(p, o))
    app = create_app(
        tokens={"flooder": FLOODER},
        recorder=HumanRecorder(tmp_path),
        limits=ClientLimits(reads_per_second=5, patience=0),  # over the rate: refused at once
    )
    with serve_in_thread(app) as url, client(url, FLOODER) as http:
        answers = [http.get("/play/api/progress", params={"player": PLAYER}) for _ in range(6)]
        assert [a.status_code for a in answers] == [200] * 5 + [429]
        assert answers[-1].json()["error"]["code"] == "rate_limited"
        assert answers[0].json()["recorded"] == {"treasure-hunt": list(range(300))}
        # a new episode is read from where the last read stopped, not from the start
        play(http, {"env": "megacity", "player": PLAYER, "seed": 7})
        time.sleep(1.1)
        progress = http.get("/play/api/progress", params={"player": PLAYER}).json()
        assert progress["recorded"]["megacity"] == [7]
    assert reads[0] == 0 and len(reads) == 2 and reads[1] > 0


@pytest.mark.slow
def test_polling_progress_of_a_big_run_slows_no_one(tmp_path: Path) -> None:
    """The issue's attack: 8 connections polling the progress of a 5,000-episode run
    raised another tenant's p50 x231. Target: at most 10x."""
    fill_recorded_run(tmp_path / "runs", trajectories=False)
    options = [
        "--token-file",
        str(token_file(tmp_path, ATTACK_TOKENS)),
        "--record",
        str(tmp_path / "runs"),
    ]
    holds = lambda m: p50(m.loud) <= 10 * p50(m.quiet)  # noqa: E731
    with serving(*options) as (url, _):
        bystander = Bystander(url)
        last = attacked(bystander, "progress-polling", url, holds)[-1]
        bystander.close()
    assert holds(last), (p50(last.loud), p50(last.quiet))
