"""`textenvs run --env-url`: one episode on a service, and a clear error without one."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from textenvs.service import create_app
from textenvs.service.background import serve_in_thread

RUN = [sys.executable, "-m", "textenvs.cli", "run", "treasure-hunt", "--agent", "scripted"]


@pytest.mark.slow
def test_run_on_a_service_prints_the_local_transcript() -> None:
    local = subprocess.run([*RUN, "--seed", "3"], capture_output=True, text=True, timeout=60)
    with serve_in_thread(create_app()) as url:
        done = subprocess.run(
            [*RUN, "--seed", "3", "--env-url", url], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    assert "Outcome: " in done.stdout and done.stdout == local.stdout


def test_unreachable_service_is_a_one_line_error() -> None:
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}"
        done = subprocess.run(
            [*RUN, "--seed", "3", "--env-url", dead], capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"textenvs run: error: cannot reach a textenvs service at {dead} "
        "([Errno 111] Connection refused)"
    ]


def test_a_server_that_is_not_textenvs_is_a_one_line_error() -> None:
    from http.server import BaseHTTPRequestHandler, HTTPServer
    from threading import Thread

    class NotFound(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    httpd = HTTPServer(("127.0.0.1", 0), NotFound)
    Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        done = subprocess.run(
            [*RUN, "--seed", "3", "--env-url", url], capture_output=True, text=True, timeout=60
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith(f"textenvs run: error: the service at {url} answered 404")
