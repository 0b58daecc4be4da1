"""Every route of the app, enumerated from the app itself (a new route is checked without
anyone listing it): with tokens, each needs one but the documented public few, and no
secret a client sends reaches the server's log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.routing import Route, WebSocketRoute
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.service.attacker import ENV, TOKENS, every_route, serve_process
from textenvs.play.page import create_app
from textenvs.service.background import serve_in_thread

#: served without a token (docs/service.md): liveness and the play page's own files,
#: which a browser loads before the page can ask for a token
PUBLIC = {"/v1/health", "/", "/play", "/play/", "/play/static/{name}"}
BOB = {"Authorization": f"Bearer {TOKENS['bob']}"}


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, list[object]]]:
    app = create_app(tokens=TOKENS, refusal_pause=0)
    with serve_in_thread(app) as url:
        yield url, list(every_route(app.routes))


def concrete(template: str, session_id: str) -> str:
    return template.format(env=ENV, session_id=session_id, name="app.js")


def test_every_route_needs_a_token_but_the_public_ones(served: tuple[str, list[object]]) -> None:
    url, routes = served
    session = httpx.post(f"{url}/v1/sessions", json={"env": ENV}, headers=BOB).json()
    http_routes = [r for r in routes if isinstance(r, Route)]
    sockets = [r for r in routes if isinstance(r, WebSocketRoute)]
    assert len(http_routes) >= 25 and sockets  # the whole app, docs pages included
    public = set()
    with httpx.Client(base_url=url, timeout=30) as http:
        for route in http_routes:
            path = concrete(route.path, session["session_id"])
            for method in sorted(route.methods or ()):
                anonymous = http.request(method, path)
                wrong = http.request(method, path, headers={"Authorization": "Bearer nope"})
                with_token = http.request(method, path, headers=BOB)
                assert with_token.status_code != 401, (method, path)
                if anonymous.status_code != 401:
                    public.add(route.path)
                else:
                    assert wrong.status_code == 401, (method, path)
                    if method != "HEAD":
                        assert anonymous.json()["error"]["code"] == "unauthorized"
    assert public == PUBLIC
    for route in sockets:  # a WebSocket without a token is refused at the handshake
        ws = url.replace("http://", "ws://") + concrete(route.path, "")
        with pytest.raises(InvalidStatus) as refused:
            connect(ws, open_timeout=10)
        assert refused.value.response.status_code == 403
        with connect(ws, additional_headers=BOB, open_timeout=10) as sock:
            sock.send('{"type": "state"}')
            assert '"state"' in sock.recv(timeout=10)


@pytest.mark.slow
def test_no_secret_in_the_server_log(tmp_path: Path) -> None:
    """Tokens put in query strings by mistake (the server never reads them there) on
    WebSocket handshakes, accepted and refused, and on requests, with the access log on."""
    log = tmp_path / "server.log"
    with serve_process(tmp_path, "--access-log", log=log) as (url, _):
        ws = url.replace("http://", "ws://") + f"/openenv/{ENV}/ws"
        with connect(f"{ws}?token=SECRET-ONE", additional_headers=BOB) as sock:
            sock.send('{"type": "state"}')
            sock.recv(timeout=10)
        with pytest.raises(InvalidStatus):
            connect(f"{ws}?token=SECRET-TWO", open_timeout=10)
        httpx.get(f"{url}/v1/envs?token=SECRET-THREE", headers=BOB, timeout=10)
        httpx.get(f"{url}/v1/envs?access_token=SECRET-FOUR", timeout=10)
    text = log.read_text()
    assert "WebSocket /openenv" in text and "GET /v1/envs" in text  # the lines are there
    assert "SECRET" not in text and TOKENS["bob"] not in text
