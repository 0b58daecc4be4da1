"""Connection hygiene on loopback: silent and dripping clients are cut off after the request
read timeout, and a flood of connections over the cap cannot lock out `/v1/health`."""

from __future__ import annotations

import gc
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread
from textenvs.service.transport.connections import uvicorn_settings

READ_TIMEOUT = 0.5
MAX_CONNECTIONS = 20


@pytest.fixture(scope="module", params=["httptools", "h11"])
def address(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    settings = uvicorn_settings(
        request.param, request_timeout=READ_TIMEOUT, max_connections=MAX_CONNECTIONS
    )
    with serve_in_thread(create_app(), **settings) as url:
        host, port = url.removeprefix("http://").split(":")
        assert host == "127.0.0.1"  # these tests only ever talk to loopback
        yield host, int(port)


def connect(address: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(address, timeout=5)
    sock.settimeout(5)
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server has closed its side (reads return EOF or reset)."""
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_silent_client_is_closed_after_the_read_timeout(address: tuple[str, int]) -> None:
    start = time.monotonic()
    with connect(address) as sock:
        assert closed_by_server(sock)
    assert READ_TIMEOUT * 0.8 < time.monotonic() - start < READ_TIMEOUT + 4


def test_dripping_client_is_closed_however_it_keeps_sending(address: tuple[str, int]) -> None:
    request = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
    start = time.monotonic()
    with connect(address) as sock:
        sock.settimeout(0.05)
        closed = False
        for byte in request:  # one byte every 20 ms: 4 s in all, far over the timeout
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            if closed_by_server(sock):
                closed = True
                break
            time.sleep(0.02)
    assert closed and time.monotonic() - start < READ_TIMEOUT + 3


def test_keep_alive_client_that_sends_requests_in_time_is_served(
    address: tuple[str, int],
) -> None:
    with httpx.Client(base_url=f"http://{address[0]}:{address[1]}", timeout=5) as http:
        for _ in range(5):
            assert http.get("/v1/health").status_code == 200
            time.sleep(READ_TIMEOUT / 2)


@pytest.mark.slow
def test_connection_flood_over_the_cap_does_not_lock_out_health() -> None:
    # A read timeout far longer than the test: only eviction can close the flood.
    settings = uvicorn_settings(request_timeout=60, max_connections=MAX_CONNECTIONS)
    with serve_in_thread(create_app(), **settings) as url:
        address = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
        flood = [connect(address) for _ in range(3 * MAX_CONNECTIONS)]
        try:
            # Each new connection evicted the one that had waited longest for its request,
            # so a new client is still served while the flood holds its sockets open.
            for _ in range(5):
                assert httpx.get(f"{url}/v1/health", timeout=5).status_code == 200
            evicted = 0
            for sock in flood:
                sock.settimeout(0.2)
                evicted += closed_by_server(sock)
            assert 2 * MAX_CONNECTIONS <= evicted < 3 * MAX_CONNECTIONS
        finally:
            for sock in flood:
                sock.close()


@pytest.mark.slow
@pytest.mark.parametrize("http", ["httptools", "h11"])
def test_a_closed_connection_leaves_no_garbage_for_the_collector(http: str) -> None:
    """A connection's objects are freed as it closes, not left in reference cycles for the
    garbage collector: under a flood of connections refused after a pause, the
    collector's walks over them (about 30 objects a connection) were pauses of 50-120 ms
    for every other client."""
    token = "alice-token-0123456789"
    app = create_app(tokens={"alice": token}, refusal_pause=0.05)
    head = "GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\r\n"
    scenario = "/v1/envs/treasure-hunt"
    requests = [  # served, refused (401 after the pause), served with a token
        head.format(path, bearer).encode()
        for path, bearer in [("/v1/health", "-"), (scenario, "nope"), (scenario, token)]
    ]

    def one_of_each(address: tuple[str, int]) -> None:
        for raw in requests:
            with socket.create_connection(address, timeout=30) as sock:  # a loaded machine
                sock.sendall(raw)
                assert sock.recv(65536).startswith(b"HTTP/1.1 ")

    with serve_in_thread(app, **uvicorn_settings(http)) as url:
        address = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
        one_of_each(address)  # first use: lazy imports and caches
        time.sleep(0.2)
        gc.collect()
        gc.disable()
        try:
            for _ in range(20):
                one_of_each(address)
            time.sleep(0.2)  # the server sees the last closes
            found = gc.collect()
        finally:
            gc.enable()
    assert found < 60, f"{found} objects in reference cycles after 60 connections"
