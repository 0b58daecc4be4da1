"""Issue 30's attacks on the service, as regressions: a slow command, WebSockets, resets,
strange frames, headers and Host names must not stall, lock out or crash anything."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.service.slow_parser import SlowParserEnv
from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread
from textenvs.service.tenancy import ClientLimits
from textenvs.service.transport.connections import uvicorn_settings

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"
TOKENS = {"alice": ALICE, "bob": BOB}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, str]]:
    app = create_app(
        tokens=TOKENS,
        command_timeout=0.5,
        max_connections=8,  # 6 WebSockets in all, 3 a client
        limits=ClientLimits(resets_per_minute=5, patience=0),  # over a rate: refused at once
    )
    settings = uvicorn_settings(max_connections=8, max_header_bytes=8192)
    with serve_in_thread(app, **settings) as url:
        yield app, url


def create(url: str, token: str, seed: int = 1) -> str:
    answer = httpx.post(f"{url}/v1/sessions", json={"env": "treasure-hunt", "seed": seed},
                        headers=auth(token))  # fmt: skip
    assert answer.status_code == 201, answer.text
    return str(answer.json()["session_id"])


def test_a_slow_command_stalls_no_one_and_is_cut_off(served: tuple[Any, str]) -> None:
    app, url = served
    slow_id = create(url, ALICE)
    app.state.store.get(slow_id, "alice").env.__class__ = SlowParserEnv
    bob_id = create(url, BOB)
    done: dict[str, float] = {}

    def slow_step() -> None:
        command = "slow " + "n" * 400  # long: read in a worker process
        answer = httpx.post(f"{url}/v1/sessions/{slow_id}/step", json={"command": command},
                            headers=auth(ALICE), timeout=60)  # fmt: skip
        done["alice"] = time.monotonic()
        done["code"] = answer.json()["error"]["code"] if answer.status_code == 422 else 0

    thread = threading.Thread(target=slow_step)
    thread.start()
    time.sleep(0.2)  # Alice's command is being read
    with httpx.Client(base_url=url, headers=auth(BOB), timeout=60) as bob:
        for _ in range(5):  # answered (the episode may end on the way: 409)
            step = bob.post(f"/v1/sessions/{bob_id}/step", json={"command": "wait"})
            assert step.status_code in (200, 409)
        assert bob.get("/v1/health").is_success
    bob_done = time.monotonic()
    thread.join()
    assert bob_done < done["alice"], "Bob waited for Alice's command"
    assert done["code"] == "command_too_slow"
    # the cut-off changed nothing: the session is where it was, and still plays
    view = httpx.get(f"{url}/v1/sessions/{slow_id}", headers=auth(ALICE)).json()
    assert view["steps_used"] == 0
    app.state.store.get(slow_id, "alice").env.__class__ = SlowParserEnv.__mro__[1]
    answer = httpx.post(f"{url}/v1/sessions/{slow_id}/step", json={"command": "north"},
                        headers=auth(ALICE))  # fmt: skip
    assert answer.status_code == 200 and answer.json()["info"]["steps_used"] == 1


def ws_url(url: str, token: str, name: str) -> str:
    return url.replace("http://", f"ws://{name}:{token}@") + "/openenv/treasure-hunt/ws"


def test_websockets_count_and_health_always_answers(served: tuple[Any, str]) -> None:
    _, url = served
    held = [connect(ws_url(url, ALICE, "alice")) for _ in range(3)]
    try:
        for sock in held:  # each is a live session
            sock.send('{"type": "state"}')
            assert '"state"' in sock.recv(timeout=10)
        with connect(ws_url(url, ALICE, "alice")) as extra:
            assert "too_many_sockets" in extra.recv(timeout=10)
            with pytest.raises(ConnectionClosed):
                extra.recv(timeout=10)
            assert extra.close_code == 1013 and extra.close_reason == "too_many_sockets"
        with connect(ws_url(url, BOB, "bob")) as other:  # another client still gets in
            other.send('{"type": "state"}')
            assert '"state"' in other.recv(timeout=10)
        for _ in range(3):
            assert httpx.get(f"{url}/v1/health", timeout=10).is_success
    finally:
        for sock in held:
            sock.close()


def test_a_silent_websocket_is_closed_and_frees_its_slot() -> None:
    """An idle socket is closed by its read timeout, long before the session's idle
    timeout, and its slot is free again (it held one of the client's sockets)."""
    app = create_app(tokens=TOKENS, idle_timeout=600, socket_idle_timeout=0.5)
    with serve_in_thread(app) as url:
        with connect(ws_url(url, ALICE, "alice")) as sock:
            sock.send('{"type": "state"}')
            assert '"state"' in sock.recv(timeout=10)
            with pytest.raises(ConnectionClosed):
                sock.recv(timeout=10)  # nothing sent: closed after 0.5 s
            assert sock.close_code == 1001 and "no message" in sock.close_reason
        deadline = time.monotonic() + 10
        health = f"{url}/v1/health"
        while httpx.get(health, headers=auth(ALICE), timeout=10).json()["sessions"] and (
            time.monotonic() < deadline
        ):
            time.sleep(0.05)
        assert httpx.get(health, headers=auth(ALICE), timeout=10).json()["sessions"] == 0


def test_binary_and_deep_frames_close_with_a_reason(served: tuple[Any, str]) -> None:
    _, url = served
    deep_options = '{"type": "step", "data": ' + '{"a": ' * 40 + "1" + "}" * 41
    frames = [(b"\x00\x01", 1003), ("[" * 50_000 + "]" * 50_000, 1009), (deep_options, 1009)]
    for frame, code in frames:
        with connect(ws_url(url, BOB, "bob"), max_size=None) as sock:
            sock.send(frame)
            with pytest.raises(ConnectionClosed):
                sock.recv(timeout=10)
            assert sock.close_code == code and sock.close_reason, frame[:20]


@pytest.mark.slow
def test_resets_are_rate_limited_everywhere(served: tuple[Any, str]) -> None:
    _, url = served
    sid = create(url, BOB)
    codes = [httpx.post(f"{url}/v1/sessions/{sid}/reset", json={}, headers=auth(BOB)).status_code
             for _ in range(6)]  # fmt: skip
    assert codes == [200] * 5 + [429]
    stateless = httpx.post(f"{url}/openenv/treasure-hunt/reset", json={}, headers=auth(BOB))
    assert stateless.status_code == 429 and "Retry-After" in stateless.headers
    with connect(ws_url(url, BOB, "bob")) as sock:
        sock.send('{"type": "reset", "data": {"seed": 1}}')
        assert "rate_limited" in sock.recv(timeout=10)
    # another client's budget is its own
    assert httpx.post(f"{url}/openenv/treasure-hunt/reset", json={}, headers=auth(ALICE)).is_success


def raw(url: str, request: bytes) -> bytes:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
            if b"\r\n\r\n" in answer and b"connection: close" in answer.lower():
                break
        return answer


@pytest.mark.parametrize(
    "host_lines",
    [
        b"Host: [::1].evil.example\r\n",
        b"Host: localhost:80@evil.example\r\n",
        b"Host: 127.0.0.1\r\nHost: evil.example\r\n",
        b"Host: localhost evil.example\r\n",
        b"",
    ],
)
def test_host_headers_are_parsed_strictly(host_lines: bytes) -> None:
    with serve_in_thread(create_app()) as url:  # no token: the Host allow-list applies
        request = b"GET /v1/envs HTTP/1.1\r\n" + host_lines + b"Connection: close\r\n\r\n"
        answer = raw(url, request)
        assert answer.startswith(b"HTTP/1.1 400") and b"bad_host" in answer, answer[:200]
        ok = raw(url, b"GET /v1/envs HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close\r\n\r\n")
        assert ok.startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_oversized_headers_are_refused(http: str) -> None:
    settings = uvicorn_settings(http, max_header_bytes=8192)
    with serve_in_thread(create_app(), **settings) as url:
        big = b"X-Big: " + b"a" * 100_000 + b"\r\n"
        request = b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\n" + big + b"\r\n"
        answer = raw(url, request)
        assert answer.split(b" ")[1] == b"431", answer[:200]
        assert httpx.get(f"{url}/v1/health").is_success
