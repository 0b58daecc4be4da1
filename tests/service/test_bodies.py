"""Bodies however sent: no legitimate body under `--max-body-bytes` is refused (in the
same write as its head, split at any point, pipelined, through httpx; with httptools and
h11), and no body of any shape makes any route answer 5xx (JSON nested ever deeper)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest
from starlette.routing import Route
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.service.attacker import (
    ENV,
    TOKENS,
    every_route,
    read_answers,
    read_response,
    request,
)
from textenvs.service.app import DEFAULT_MAX_BODY_BYTES, create_app
from textenvs.service.background import serve_in_thread
from textenvs.service.tenancy import ClientLimits
from textenvs.service.transport.connections import uvicorn_settings

BOB = {"Authorization": f"Bearer {TOKENS['bob']}"}
#: refusals of a body by its size or its framing: none is right for these
REFUSALS = (b"400", b"413", b"431")


@pytest.fixture(scope="module", params=["httptools", "h11"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    unlimited = ClientLimits(body_bytes_per_second=0)  # bodies, not their rate, are tested
    app = create_app(tokens=TOKENS, limits=unlimited, refusal_pause=0)
    with serve_in_thread(app, **uvicorn_settings(request.param)) as base:
        yield base


def step_bodies() -> list[bytes]:
    """Steps with a command of the longest allowed length, written three ways: raw UTF-8
    (80 KB), escaped (`\\u00e9`, 120 KB) and escaped surrogate pairs (240 KB)."""
    longest = 20_000
    bodies = [
        json.dumps({"command": "\U0001f600" * longest}, ensure_ascii=False).encode(),
        json.dumps({"command": "\u00e9" * longest}).encode(),
        json.dumps({"command": "\U0001f600" * longest}).encode(),
    ]
    assert max(map(len, bodies)) < DEFAULT_MAX_BODY_BYTES < 2 * max(map(len, bodies))
    assert min(map(len, bodies)) > 64 * 1024
    return bodies


def session(url: str) -> str:
    answer = httpx.post(f"{url}/v1/sessions", json={"env": ENV}, headers=BOB)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["session_id"])


@pytest.mark.slow
def test_no_legitimate_body_is_refused_however_it_is_sent(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    sid = session(url)
    path = f"/v1/sessions/{sid}/step"
    for body in step_bodies():
        raw = request("POST", path, body, TOKENS["bob"])
        head_end = raw.index(b"\r\n\r\n")
        ways = {
            "one write": [raw],
            "head split in its blank line": [raw[: head_end + 2], raw[head_end + 2 :]],
            "head and the body's start": [raw[: head_end + 1000], raw[head_end + 1000 :]],
            "many pieces": [raw[i : i + 7919] for i in range(0, len(raw), 7919)],
            "two pipelined": [raw + raw],
        }
        for way, pieces in ways.items():
            with socket.create_connection(("127.0.0.1", port)) as sock:
                for piece in pieces:
                    sock.sendall(piece)
                answers = [read_response(sock, timeout=30) for _ in range(way.count("two") + 1)]
            for answer in answers:
                assert answer[9:12] not in REFUSALS and answer[9:10] != b"5", (way, answer[:300])
        answer = httpx.post(f"{url}{path}", content=body, headers=BOB, timeout=30)
        assert answer.status_code < 500 and str(answer.status_code).encode() not in REFUSALS


@pytest.mark.parametrize("refusal", ["401", "413"])
def test_a_body_refused_unread_leaves_the_next_request_alone(url: str, refusal: str) -> None:
    """A body refused before it is read (a wrong token; over --max-body-bytes) closes its
    connection after the one answer: the rest of the body would arrive where the next
    request's head is read (a refused 249 KB body made that next request 431)."""
    port = int(url.rsplit(":", 1)[1])
    if refusal == "401":
        body, token = b" " * 200_000, "not-a-token-0123456789"
    else:
        body, token = b" " * (DEFAULT_MAX_BODY_BYTES + 1), TOKENS["bob"]
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request("POST", "/v1/sessions", body, token))
        answers = read_answers(sock, timeout=10)
    assert answers.startswith(f"HTTP/1.1 {refusal}".encode()), answers[:100]
    assert answers.count(b"HTTP/1.1 ") == 1, answers
    with httpx.Client(base_url=url, timeout=30) as http:  # one keep-alive connection
        auth = {"Authorization": f"Bearer {token}"}
        refused = http.post("/v1/sessions", content=body, headers=auth)
        assert refused.status_code == int(refusal)
        assert http.get(f"/v1/envs/{ENV}", headers=BOB).status_code == 200


def nested(depth: int, shape: str) -> str:
    if shape == "arrays":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


def envelopes(inner: str) -> list[str]:
    """`inner` as the whole body and in every field a route reads."""
    return [
        inner,
        f'{{"env": "{ENV}", "options": {inner}}}',
        f'{{"action": {inner}}}',
        f'{{"jsonrpc": "2.0", "method": "ping", "id": {inner}}}',
        f'{{"jsonrpc": "2.0", "method": {inner}}}',
    ]


def test_no_route_answers_5xx_for_any_nesting(url: str) -> None:
    """Every route that takes a body (enumerated from the app, so a new one is fuzzed
    too), bodies nested 10 to 100,000 deep, alone and inside each field."""
    sid = session(url)
    app = create_app(tokens=TOKENS)
    routes = [
        (method, route.path)
        for route in every_route(app.routes)
        if isinstance(route, Route)
        for method in sorted(route.methods or ())
        if method in ("POST", "PUT", "PATCH", "DELETE")
    ]
    assert len(routes) >= 7
    statuses = set()
    with httpx.Client(base_url=url, headers=BOB, timeout=30) as http:
        for method, template in routes:
            path = template.format(env=ENV, session_id=sid)
            for depth in (10, 1000, 100_000):
                for shape in ("arrays", "objects"):
                    for body in envelopes(nested(depth, shape)):
                        answer = http.request(method, path, content=body.encode())
                        statuses.add(answer.status_code)
                        assert answer.status_code < 500, (method, template, depth, answer.text)
    assert 422 in statuses and 413 in statuses  # refused as invalid, and as too big


def test_a_websocket_message_over_the_body_limit_closes_the_socket() -> None:
    app = create_app(tokens=TOKENS, max_body_bytes=64 * 1024)
    with serve_in_thread(app, **uvicorn_settings(max_body_bytes=64 * 1024)) as base:
        ws = base.replace("http://", f"ws://bob:{TOKENS['bob']}@") + f"/openenv/{ENV}/ws"
        with connect(ws, max_size=None) as sock:
            sock.send('{"type": "step", "data": {"command": "' + "n" * 64 * 1024 + '"}}')
            with pytest.raises(ConnectionClosed):
                sock.recv(timeout=10)
        assert sock.close_code == 1009
