"""Human runs through the play API over real sockets: what is recorded, in the eval
format, and how baseline sets hand out seeds. (The page itself: test_browser.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import textenvs
from tests.web.conftest import PILOT_SEEDS, UNREADABLE, read_run, reference_episode
from textenvs.cli import main as cli_main
from textenvs.evals.report import write_report

ENV_NAMES = textenvs.names()


@pytest.fixture
def http(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, timeout=30) as client:
        yield client


def start(http: httpx.Client, **body: Any) -> dict[str, Any]:
    response = http.post("/play/api/sessions", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def error_code(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    return response.json()["error"]["code"]


def play_through(http: httpx.Client, session: dict[str, Any], commands: list[str]) -> list[dict]:
    steps = []
    for command in commands:
        step = http.post(f"/v1/sessions/{session['session_id']}/step", json={"command": command})
        assert step.status_code == 200, step.text
        steps.append(step.json())
        if step.json()["terminated"] or step.json()["truncated"]:
            break
    return steps


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_a_finished_episode_is_recorded_as_an_eval_run(
    http: httpx.Client, record_dir: Path, env_name: str
) -> None:
    player = f"Ada-{env_name}"
    session = start(http, env=env_name, set="pilot", player=player)
    assert session["seed"] == PILOT_SEEDS[0]
    run = f"pilot-{player.lower()}"
    assert session["recording"] == {"run": run, "player": player.lower(), "set": "pilot"}
    reference = reference_episode(env_name, session["seed"])
    commands = [turn.command for turn in reference.turns]
    assert commands[0] == UNREADABLE
    # The person reads exactly what an agent reads, step by step.
    assert session["observation"] == reference.turns[0].observation
    steps = play_through(http, session, commands)
    assert [s["observation"] for s in steps[:-1]] == [t.observation for t in reference.turns[1:]]
    assert steps[-1]["observation"] == reference.final_observation
    assert steps[0]["info"]["invalid_action"]

    progress = http.get("/play/api/progress", params={"player": player, "set": "pilot"}).json()
    assert progress["recorded"] == {env_name: [PILOT_SEEDS[0]]}
    assert progress["run"] == run and progress["seeds"] == list(PILOT_SEEDS)

    config, records = read_run(record_dir / run)
    assert config["agent"] == {"name": "human", "player": player.lower(), "client": "anonymous"}
    assert config["seed_list"] == list(PILOT_SEEDS) and config["seeds"] == "3-4"
    assert config["envs"][env_name] == textenvs.get(env_name).load().version
    [record] = records
    assert (record["env"], record["seed"], record["episode"]) == (env_name, 3, 0)
    assert record["agent"] == "human"
    assert record["outcome"] == reference.outcome
    assert record["return"] == pytest.approx(sum(s["reward"] for s in steps))
    assert record["steps"] == len(steps) and record["invalid_actions"] >= 1
    trajectory = json.loads((record_dir / run / record["trajectory"]).read_text())
    assert [t["command"] for t in trajectory["turns"]] == commands
    assert [t["observation"] for t in trajectory["turns"]] == [
        t.observation for t in reference.turns
    ]
    assert all(t["latency_s"] >= 0 for t in trajectory["turns"])


def test_report_pairs_the_human_with_a_model_on_the_same_seeds(
    http: httpx.Client, record_dir: Path, tmp_path: Path
) -> None:
    env_name = "treasure-hunt"
    for _ in PILOT_SEEDS:
        session = start(http, env=env_name, set="pilot", player="grace")
        reference = reference_episode(env_name, session["seed"])
        play_through(http, session, [t.command for t in reference.turns])
    model = tmp_path / "scripted"
    seeds = ",".join(map(str, PILOT_SEEDS))
    argv = ["eval", "--env", env_name, "--agent", "scripted", "--seeds", seeds, "--out"]
    assert cli_main([*argv, str(model)]) == 0
    human = record_dir / "pilot-grace"
    http.get("/play/api/progress", params={"player": "grace", "set": "pilot"})  # all written
    write_report([model, human], tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    assert "Paired comparison" in md and "pilot-grace" in md
    csv = (tmp_path / "report" / "results.csv").read_text()
    assert "human" in csv


def test_a_set_hands_out_each_seed_once_then_is_complete(http: httpx.Client) -> None:
    first = start(http, env="em-anomaly", set="pilot", player="hopper")
    # Leaving a seed does not give it back: the next one comes.
    assert http.delete(f"/v1/sessions/{first['session_id']}").status_code == 204
    second = start(http, env="em-anomaly", set="pilot", player="hopper")
    assert (first["seed"], second["seed"]) == PILOT_SEEDS
    again = http.post(
        "/play/api/sessions", json={"env": "em-anomaly", "set": "pilot", "player": "hopper"}
    )
    assert error_code(again, 409) == "set_complete"
    # Another scenario, or another player, starts the set from its first seed.
    assert start(http, env="squad-recon", set="pilot", player="hopper")["seed"] == 3
    assert start(http, env="em-anomaly", set="pilot", player="lovelace")["seed"] == 3


def test_free_play_records_repeated_seeds_as_further_episodes(
    http: httpx.Client, record_dir: Path
) -> None:
    for _ in range(2):
        session = start(http, env="treasure-hunt", seed=7, player="turing")
        assert session["recording"]["set"] is None
        play_through(http, session, ["wait"] * 40)
    progress = http.get("/play/api/progress", params={"player": "turing"}).json()
    assert progress == {
        "run": "free-turing",
        "set": None,
        "seeds": [],
        "recorded": {"treasure-hunt": [7]},
    }
    config, records = read_run(record_dir / "free-turing")
    assert [(r["seed"], r["episode"]) for r in records] == [(7, 0), (7, 1)]
    assert config["seeds"] == "chosen by the player"


def test_a_session_reset_by_hand_is_not_recorded(http: httpx.Client, record_dir: Path) -> None:
    session = start(http, env="treasure-hunt", seed=1, player="noether")
    sid = session["session_id"]
    assert http.post(f"/v1/sessions/{sid}/reset", json={"seed": 2}).status_code == 200
    play_through(http, session, ["wait"] * 40)
    progress = http.get("/play/api/progress", params={"player": "noether"}).json()
    assert progress["recorded"] == {}


def test_bad_requests_are_clear_json_errors(http: httpx.Client, record_dir: Path) -> None:
    post = lambda body: http.post("/play/api/sessions", json=body)  # noqa: E731
    assert error_code(post({"env": "megacity"}), 422) == "player_required"
    assert error_code(post({"env": "megacity", "player": "../etc"}), 422) == "invalid_request"
    assert error_code(post({"env": "megacity", "player": "x", "set": "nope"}), 404) == (
        "unknown_set"
    )
    both = {"env": "megacity", "player": "x", "set": "pilot", "seed": 1}
    assert error_code(post(both), 422) == "invalid_request"
    assert error_code(post({"env": "chess", "player": "x"}), 422) == "invalid_request"
    assert error_code(post({"env": "megacity", "player": "x", "colour": 1}), 422) == (
        "invalid_request"
    )
    # A run folder that holds another configuration is refused before anyone plays.
    (record_dir / "free-mallory").mkdir()
    (record_dir / "free-mallory" / "config.json").write_text(json.dumps({"envs": {}}))
    refused = post({"env": "megacity", "player": "mallory"})
    assert error_code(refused, 409) == "run_mismatch"
    assert str(record_dir) not in refused.text  # no server paths in answers


def test_the_page_is_served_with_a_strict_policy(url: str) -> None:
    with httpx.Client(base_url=url, timeout=10) as http:
        assert http.get("/").headers["location"] == "play/"
        page = http.get("/play/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy
        assert "http" not in page.text.replace('href="static', "").lower().split("<body")[0]
        for name, kind in (("app.js", "text/javascript"), ("style.css", "text/css")):
            asset = http.get(f"/play/static/{name}")
            assert asset.status_code == 200 and asset.headers["content-type"].startswith(kind)
            assert "http://" not in asset.text and "https://" not in asset.text
        assert error_code(http.get("/play/static/index.htm"), 404) == "not_found"
        assert error_code(http.get("/play/", headers={"Host": "evil.example"}), 400) == "bad_host"
        setup = http.get("/play/api/setup").json()
        assert setup == {"recording": True, "sets": [{"name": "pilot", "seeds": [3, 4]}]}


def test_without_recording_the_page_plays_but_records_nothing(tmp_path: Path) -> None:
    from textenvs.play.page import create_app
    from textenvs.service.background import serve_in_thread

    with serve_in_thread(create_app()) as url, httpx.Client(base_url=url) as http:
        assert http.get("/play/api/setup").json() == {"recording": False, "sets": []}
        session = start(http, env="magnetic-field", seed=5)
        assert session["recording"] is None and session["seed"] == 5
        body = {"env": "magnetic-field", "set": "pilot"}
        assert error_code(http.post("/play/api/sessions", json=body), 404) == "unknown_set"
        progress = http.get("/play/api/progress", params={"player": "x"})
        assert error_code(progress, 404) == "not_recording"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "--baseline-set", "pilot=0-9"], "needs --record"),
        (["serve", "--record", "R", "--baseline-set", "pilot"], "NAME=SEEDS"),
        (["serve", "--record", "R", "--baseline-set", "free=1"], "NAME=SEEDS"),
        (["serve", "--record", "R", "--baseline-set", "a=1", "--baseline-set", "a=2"], "twice"),
        (["play", "megacity", "--web", "--env-option", "x=1"], "not supported with --web"),
        (["play", "megacity", "--web", "--port", "70000"], "--port"),
    ],
)
def test_bad_switches_are_one_line_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = [str(tmp_path / a) if a == "R" else a for a in argv]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.slow
def test_play_web_serves_the_page_until_interrupted(tmp_path: Path) -> None:
    argv = ["play", "squad-recon", "--web", "--no-open", "--seed", "4", "--record", "runs"]
    process = subprocess.Popen(
        [sys.executable, "-m", "textenvs.cli", *argv, "--baseline-set", "pilot=1-2"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        # SIGINT at its default, as under a terminal: one ignored by whatever started the
        # suite (a background job) is inherited, and Python then never raises
        # KeyboardInterrupt
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert "play at http://127.0.0.1:" in first, first + process.stderr.read()
        page = first.split("play at ")[1].strip()
        assert page.endswith("/play/?env=squad-recon&seed=4")
        with httpx.Client(timeout=10) as http:
            assert "textenvs" in http.get(page).text
            base = page.split("/play/")[0]
            setup = http.get(f"{base}/play/api/setup").json()
            assert setup == {"recording": True, "sets": [{"name": "pilot", "seeds": [1, 2]}]}
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=30)
        assert process.returncode == 0 and "Stopped." in out
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_run_folder_has_one_writer(http: httpx.Client, record_dir: Path, tmp_path: Path) -> None:
    from textenvs.evals import store
    from textenvs.play.page import create_app
    from textenvs.play.record import HumanRecorder
    from textenvs.service.background import serve_in_thread

    start(http, env="megacity", seed=1, player="curie")  # this server now writes free-curie
    body = {"env": "megacity", "player": "curie"}
    with (
        serve_in_thread(create_app(recorder=HumanRecorder(record_dir))) as other_url,
        httpx.Client(base_url=other_url, timeout=30) as other,
    ):
        assert error_code(other.post("/play/api/sessions", json=body), 409) == "run_mismatch"
    with pytest.raises(store.RunDirError, match="in use by another textenvs run"):
        store.RunLock(record_dir / "free-curie").acquire()
    # A server that stops lets go of its run folders.
    with serve_in_thread(create_app(recorder=HumanRecorder(tmp_path))) as own_url:
        assert httpx.post(f"{own_url}/play/api/sessions", json=body).status_code == 201
    with store.RunLock(tmp_path / "free-curie"):
        pass
