"""Connection hygiene on loopback: silent and dripping clients are cut off after the request
read timeout, and a flood of connections over the cap cannot lock out `/v1/health`."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread
from textenvs.service.connections import uvicorn_settings

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
