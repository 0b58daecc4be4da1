"""Versions meet (issue 42): a new client against an older server, and an older client
against this one, either work or stop before the first episode with one line that says
which versions differ and what to do; never an error in every episode.

An older (or newer) server is the real app speaking another service API: health without
(or with other) `api` fields, and for API 1 a create with a `label` refused as the server
from before labels refused it (an unknown field: 422)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from textenvs.evals import run_folder, store
from textenvs.service import ServiceClient, create_app
from textenvs.service.background import serve_in_thread
from textenvs.service.versions import SERVICE_API

ENV = "treasure-hunt"
EXTRA_FIELD = {
    "loc": ["body", "label"],
    "msg": "Extra inputs are not permitted",
    "type": "extra_forbidden",
}


def speaking(app: Any, api: int, oldest_client_api: int = 1) -> Any:
    """`app` as a server of service API `api` (see `textenvs.service.versions`)."""

    async def other_api(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["path"] == "/v1/health":
            await app(scope, receive, rewriting_health(send, api, oldest_client_api))
            return
        if api < 2 and scope["path"] == "/v1/sessions" and scope["method"] == "POST":
            message = await receive()
            if "label" in json.loads(message.get("body") or b"{}"):
                await answer(send, 422, {"code": "invalid_request", "details": [EXTRA_FIELD]})
                return
            receive = replaying(message, receive)
        await app(scope, receive, send)

    return other_api


def replaying(first: dict, receive: Any) -> Any:
    """`receive`, with the message already read given back first."""
    pending = [first]

    async def replayed() -> dict:
        return pending.pop() if pending else await receive()

    return replayed


def rewriting_health(send: Any, api: int, oldest_client_api: int) -> Any:
    async def rewrite(message: dict) -> None:
        if message["type"] == "http.response.start":
            return  # sent with the body, whose length changes
        health = json.loads(message["body"])
        health.pop("api"), health.pop("oldest_client_api")
        if api > 1:  # API 1 had no such fields
            health.update(api=api, oldest_client_api=oldest_client_api)
        await answer(send, 200, health)

    return rewrite


async def answer(send: Any, status: int, data: dict) -> None:
    body = json.dumps(
        {"error": {"message": "the request is invalid", **data}} if status >= 400 else data
    )
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})


@contextmanager
def server_of_api(api: int, oldest_client_api: int = 1) -> Iterator[str]:
    with serve_in_thread(speaking(create_app(idle_timeout=0), api, oldest_client_api)) as url:
        yield url


def evaluate(url: str, out: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "textenvs.cli", "eval", "--env", ENV, "--agent", "random"]
    cmd += ["--seeds", "0-1", "--concurrency", "2", "--out", str(out), "--env-url", url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


@pytest.mark.slow
def test_a_new_eval_plays_on_a_server_from_before_labels(tmp_path: Path) -> None:
    with server_of_api(1) as url:
        labelled = {"env": ENV, "seed": 1, "label": "a-run"}
        refused = httpx.post(f"{url}/v1/sessions", json=labelled)  # what failed every episode
        assert refused.status_code == 422, refused.text
        assert "api" not in httpx.get(f"{url}/v1/health").json()
        done = evaluate(url, tmp_path / "run")
        left = httpx.get(f"{url}/v1/health").json()["sessions"]
    assert done.returncode == 0, done.stderr
    assert "older than this one (no session labels)" in done.stdout + done.stderr
    records = store.read_episodes(tmp_path / "run")
    assert sorted(r["seed"] for r in records) == [0, 1]
    assert all(r["outcome"] != "agent_error" for r in records)
    assert json.loads((tmp_path / "run" / run_folder.CONFIG).read_text())["session_label"] is None
    assert left == 0


@pytest.mark.slow
def test_a_client_the_server_no_longer_serves_stops_before_the_first_episode(
    tmp_path: Path,
) -> None:
    newer = SERVICE_API + 1
    with server_of_api(newer, oldest_client_api=newer) as url:
        done = evaluate(url, tmp_path / "run")
        opened = httpx.get(f"{url}/v1/health").json()["sessions"]
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"service API {newer}" in lines[0] and f"speaks API {SERVICE_API}" in lines[0]
    assert "upgrade textenvs here" in lines[0]
    assert opened == 0 and not (tmp_path / "run" / run_folder.EPISODES).exists()


def test_an_older_client_is_served_by_this_server() -> None:
    """An API 1 client sends no label and reads only `status` and `version` of health:
    this server's additions change nothing it relies on."""
    with serve_in_thread(create_app()) as url, ServiceClient(url) as client:
        health = client.health()
        assert health["status"] == "ok" and health["oldest_client_api"] <= 1
        created = client.request("POST", "/v1/sessions", {"env": ENV, "seed": 3, "options": None})
        sid = created["session_id"]
        assert client.step(sid, command="wait")["info"]["steps_used"] == 1
        client.delete(sid)
        assert client.api() == SERVICE_API
