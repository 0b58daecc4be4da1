"""The HTTP service over real sockets: lifecycle per scenario, errors, auth, limits."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import textenvs
from tests.service import SHARED_SERVER_LIMITS
from textenvs.cli import main as cli_main
from textenvs.core.parsing import MAX_COMMAND_CHARS
from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread

ENV_NAMES = textenvs.names()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_in_thread(
        create_app(max_sessions=200, max_body_bytes=64 * 1024, limits=SHARED_SERVER_LIMITS)
    ) as base:
        yield base


def jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value))


def create(http: httpx.Client, env: str, seed: int = 0) -> dict[str, Any]:
    response = http.post("/v1/sessions", json={"env": env, "seed": seed})
    assert response.status_code == 201, response.text
    return response.json()


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code
    assert "Traceback" not in response.text and 'File "' not in response.text
    response.text.encode("ascii")  # user text is never echoed raw
    return error


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_lifecycle_matches_local_env(http: httpx.Client, env_name: str) -> None:
    listing = {e["name"]: e for e in http.get("/v1/envs").json()["envs"]}
    meta = listing[env_name]
    local = textenvs.make(env_name)
    assert meta["max_steps"] == local.max_steps and meta["version"] == str(local.version)
    try:
        rules = local.rules
    except FileNotFoundError:  # a scenario still being written has no rules text yet
        rules = ""
    assert meta["rules"] == rules
    assert meta["action_schema"] == local.action_schema.model_json_schema()
    assert http.get(f"/v1/envs/{env_name}").json() == meta

    created = create(http, env_name, seed=11)
    sid = created["session_id"]
    text, info = local.reset(seed=11)
    assert (created["observation"], created["info"], created["seed"]) == (text, jsonable(info), 11)

    import numpy as np

    rng = np.random.default_rng(5)
    for _ in range(3):
        command = local.random_command(info, rng)
        step = http.post(f"/v1/sessions/{sid}/step", json={"command": command}).json()
        text, reward, terminated, truncated, info = local.step(command)
        assert step == {
            "observation": text,
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "info": jsonable(info),
        }
        if terminated or truncated:
            break
    view = http.get(f"/v1/sessions/{sid}").json()
    assert view["observation"] == text and view["steps_used"] == info["steps_used"]
    assert view["session_id"] == sid and view["env"] == env_name

    again = http.post(f"/v1/sessions/{sid}/reset", json={"seed": 11}).json()
    assert again["observation"] == created["observation"] and again["steps_used"] == 0

    assert http.delete(f"/v1/sessions/{sid}").status_code == 204
    assert_error(http.get(f"/v1/sessions/{sid}"), 404, "unknown_session")
    assert_error(http.delete(f"/v1/sessions/{sid}"), 404, "unknown_session")


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_bad_command_wastes_a_turn_like_the_local_env(http: httpx.Client, env_name: str) -> None:
    sid = create(http, env_name, seed=2)["session_id"]
    step = http.post(f"/v1/sessions/{sid}/step", json={"command": "xyzzy plugh"}).json()
    assert step["info"]["invalid_action"] is True and step["info"]["steps_used"] == 1
    http.delete(f"/v1/sessions/{sid}")


def test_structured_action_and_invalid_action(http: httpx.Client) -> None:
    env_name = ENV_NAMES[0]
    sid = create(http, env_name)["session_id"]
    error = assert_error(
        http.post(f"/v1/sessions/{sid}/step", json={"action": {"no_such_field": 1}}),
        422,
        "invalid_action",
    )
    assert error["details"]
    assert http.get(f"/v1/sessions/{sid}").json()["steps_used"] == 0


def test_episode_over_is_409_until_reset(http: httpx.Client) -> None:
    env_name = ENV_NAMES[0]
    sid = create(http, env_name)["session_id"]
    for _ in range(textenvs.make(env_name).max_steps):
        step = http.post(f"/v1/sessions/{sid}/step", json={"command": "xyzzy"}).json()
    assert step["truncated"] is True
    assert_error(http.post(f"/v1/sessions/{sid}/step", json={"command": "x"}), 409, "episode_over")
    http.post(f"/v1/sessions/{sid}/reset", json={})
    assert http.post(f"/v1/sessions/{sid}/step", json={"command": "x"}).status_code == 200


def test_unknown_env_and_session_and_no_listing(http: httpx.Client) -> None:
    # `env` is an enum in the schema: an unknown name is a 422 that lists the known ones.
    error = assert_error(http.post("/v1/sessions", json={"env": "nope"}), 422, "invalid_request")
    assert ENV_NAMES[0] in error["details"][0]["msg"]
    assert_error(http.get("/v1/envs/nope"), 404, "unknown_env")
    assert_error(http.get("/v1/sessions/" + "A" * 32), 404, "unknown_session")
    assert_error(
        http.post("/v1/sessions/" + "A" * 32 + "/step", json={"command": "n"}),
        404,
        "unknown_session",
    )
    assert_error(http.get("/v1/sessions/bad%20id"), 422, "invalid_request")
    # No endpoint enumerates sessions or stops the server.
    assert http.get("/v1/sessions").status_code in (404, 405)
    assert http.post("/v1/shutdown").status_code == 404


def test_session_ids_are_unguessable(http: httpx.Client) -> None:
    ids = [create(http, ENV_NAMES[0])["session_id"] for _ in range(20)]
    assert len(set(ids)) == 20 and all(len(i) >= 32 for i in ids)
    for sid in ids:
        http.delete(f"/v1/sessions/{sid}")


def test_create_rejects_bad_options_and_seeds(http: httpx.Client) -> None:
    env_name = ENV_NAMES[0]
    body = {"env": env_name, "seed": -1}
    assert_error(http.post("/v1/sessions", json=body), 422, "invalid_request")
    assert_error(http.post("/v1/sessions", json={**body, "seed": 2**70}), 422, "invalid_request")
    unknown = {"env": env_name, "options": {"no_such_option\ud800": 1}}
    raw = json.dumps(unknown).encode()
    response = http.post("/v1/sessions", content=raw, headers={"content-type": "application/json"})
    assert_error(response, 422, "invalid_options")
    seeded = http.post("/v1/sessions", json={"env": env_name}).json()
    assert isinstance(seeded["seed"], int)  # chosen by the server and returned
    http.delete(f"/v1/sessions/{seeded['session_id']}")


def _raw_step(http: httpx.Client, sid: str, body: bytes) -> httpx.Response:
    return http.post(
        f"/v1/sessions/{sid}/step", content=body, headers={"content-type": "application/json"}
    )


MALFORMED: list[tuple[str, bytes, int, str]] = [
    ("malformed json", b'{"command": ', 400, "malformed_json"),
    ("not utf-8", b'{"command": "\xff\xfe"}', 400, "malformed_json"),
    ("unknown field", b'{"command": "n", "extra": 1}', 422, "invalid_request"),
    ("both fields", b'{"command": "n", "action": {}}', 422, "invalid_request"),
    ("neither field", b"{}", 422, "invalid_request"),
    ("wrong type", b'{"command": 5}', 422, "invalid_request"),
    ("array body", b'["n"]', 422, "invalid_request"),
    ("NUL byte", b'{"command": "north\\u0000"}', 422, "invalid_request"),
    ("lone surrogate", b'{"command": "\\ud800"}', 422, "invalid_request"),
    ("control char", b'{"command": "no\\u0007rth"}', 422, "invalid_request"),
    ("escape sequence", b'{"command": "\\u001b[31mnorth"}', 422, "invalid_request"),
    (
        "too long",
        json.dumps({"command": "n" * (MAX_COMMAND_CHARS + 1)}).encode(),
        422,
        "invalid_request",
    ),
    ("megabyte", json.dumps({"command": "n " * 500_000}).encode(), 413, "payload_too_large"),
]


@pytest.mark.parametrize(
    ("body", "status", "code"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_input_is_a_clear_4xx_and_the_session_survives(
    http: httpx.Client, body: bytes, status: int, code: str
) -> None:
    env_name = ENV_NAMES[0]
    sid = create(http, env_name, seed=4)["session_id"]
    before = http.get(f"/v1/sessions/{sid}").json()
    assert_error(_raw_step(http, sid, body), status, code)
    assert http.get(f"/v1/sessions/{sid}").json() == before
    good = http.post(f"/v1/sessions/{sid}/step", json={"command": "look"})
    assert good.status_code == 200 and good.json()["info"]["steps_used"] == 1
    http.delete(f"/v1/sessions/{sid}")


def test_chunked_oversized_body_is_413(url: str) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"env": "'
        for _ in range(100):
            yield b"x" * 4096
        yield b'"}'

    with httpx.Client(base_url=url) as http:
        response = http.post("/v1/sessions", content=chunks())
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "payload_too_large")


def test_raw_socket_garbage_does_not_hurt_the_server(url: str, http: httpx.Client) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"\x00\x01GARBAGE \xff\r\n\r\n")
        sock.recv(1024)
    assert http.get("/v1/health").json()["status"] == "ok"


def test_capacity_limit_is_a_typed_503() -> None:
    with serve_in_thread(create_app(max_sessions=3)) as base, httpx.Client(base_url=base) as http:
        ids = [create(http, ENV_NAMES[0])["session_id"] for _ in range(3)]
        response = http.post("/v1/sessions", json={"env": ENV_NAMES[0]})
        assert_error(response, 503, "at_capacity")
        assert response.headers["retry-after"] == "1"
        assert http.get("/v1/health").json()["sessions"] == 3
        http.delete(f"/v1/sessions/{ids[0]}")
        create(http, ENV_NAMES[0])


def test_idle_sessions_expire_and_active_ones_live() -> None:
    app = create_app(idle_timeout=0.5)
    with serve_in_thread(app) as base, httpx.Client(base_url=base) as http:
        idle = create(http, ENV_NAMES[0])["session_id"]
        read_only = create(http, ENV_NAMES[0])["session_id"]
        busy = create(http, ENV_NAMES[0])["session_id"]
        for i in range(8):
            time.sleep(0.15)
            # Reads do not count as use; steps and resets do.
            assert http.get(f"/v1/sessions/{read_only}").status_code in (200, 404)
            action = "step" if i % 2 else "reset"
            body = {"command": "wait"} if action == "step" else {}
            assert http.post(f"/v1/sessions/{busy}/{action}", json=body).status_code == 200
        # The reaper dropped the idle and the read-only ones on its own.
        assert http.get("/v1/health").json()["sessions"] == 1
        assert_error(http.get(f"/v1/sessions/{idle}"), 404, "unknown_session")
        assert_error(http.get(f"/v1/sessions/{read_only}"), 404, "unknown_session")
        assert http.get(f"/v1/sessions/{busy}").status_code == 200


def test_sessions_end_at_their_maximum_lifetime_however_busy() -> None:
    app = create_app(idle_timeout=60, max_lifetime=0.6)
    with serve_in_thread(app) as base, httpx.Client(base_url=base) as http:
        sid = create(http, ENV_NAMES[0])["session_id"]
        deadline = time.monotonic() + 5
        statuses = []
        while time.monotonic() < deadline:
            response = http.post(f"/v1/sessions/{sid}/step", json={"command": "wait"})
            statuses.append(response.status_code)
            if response.status_code == 404:
                break
            if response.status_code == 409:
                http.post(f"/v1/sessions/{sid}/reset", json={})
            time.sleep(0.05)
        assert statuses[0] == 200 and statuses[-1] == 404
        assert_error(response, 404, "unknown_session")
        assert http.get("/v1/health").json()["sessions"] == 0


@pytest.mark.slow
def test_bearer_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    token = "s3cret-token"
    with serve_in_thread(create_app(token=token)) as base, httpx.Client(base_url=base) as http:
        assert http.get("/v1/health").status_code == 200  # liveness stays public
        assert_error(http.get("/v1/envs"), 401, "unauthorized")
        wrong = {"Authorization": "Bearer nope"}
        assert_error(http.get("/v1/envs", headers=wrong), 401, "unauthorized")
        basic = {"Authorization": f"Basic {token}"}
        assert_error(http.get("/v1/envs", headers=basic), 401, "unauthorized")
        assert_error(http.get(f"/v1/envs?token={token}"), 401, "unauthorized")
        good = {"Authorization": f"Bearer {token}"}
        response = http.post("/v1/sessions", json={"env": ENV_NAMES[0]}, headers=good)
        assert response.status_code == 201
        sid = response.json()["session_id"]
        assert_error(http.get(f"/v1/sessions/{sid}"), 401, "unauthorized")
        assert http.get(f"/v1/sessions/{sid}", headers=good).status_code == 200
        # The client reads the token from the environment.
        from textenvs.service.client import ServiceClient

        monkeypatch.setenv("TEXTENVS_TOKEN", token)
        with ServiceClient(base) as client:
            assert client.get(sid)["session_id"] == sid


def test_serve_refuses_a_missing_token_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEXTENVS_TEST_NO_SUCH_TOKEN", raising=False)
    assert cli_main(["serve", "--token-env", "TEXTENVS_TEST_NO_SUCH_TOKEN"]) == 2


def test_megacity_levels_reach_the_service(http: httpx.Client) -> None:
    """A session's `level` option draws the maps the local env draws at that level, on
    create and on reset; a level that does not exist is a 422."""
    local = textenvs.make("megacity")
    meta = http.get("/v1/envs/megacity").json()
    assert (meta["levels"], meta["default_level"]) == ([0, 1, 2, 3], 2)
    assert http.get("/v1/envs/treasure-hunt").json()["levels"] == []
    body = {"env": "megacity", "seed": 4, "options": {"level": 0}}
    created = http.post("/v1/sessions", json=body).json()
    assert created["observation"] == local.reset(seed=4, options={"level": 0})[0]
    sid = created["session_id"]
    again = http.post(f"/v1/sessions/{sid}/reset", json={"seed": 4, "options": {"level": 3}})
    assert again.json()["observation"] == local.reset(seed=4, options={"level": 3})[0]
    assert created["observation"] != again.json()["observation"]
    http.delete(f"/v1/sessions/{sid}")
    error = assert_error(
        http.post("/v1/sessions", json={**body, "options": {"level": 4}}), 422, "invalid_options"
    )
    assert "level must be one of (0, 1, 2, 3)" in error["message"]
