"""Run the service in a background thread on a free loopback port (tests, notebooks)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

#: seconds uvicorn waits at exit for open connections and request tasks before cancelling
SHUTDOWN_GRACE_S = 3.0


@contextmanager
def serve_in_thread(
    app: Any, host: str = "127.0.0.1", timeout: float = 20.0, port: int = 0, **settings: Any
) -> Iterator[str]:
    """Serve `app` with uvicorn on `host` and `port` (0: chosen by the OS); yields the base URL.
    `settings` go to `uvicorn.Config` (e.g. `http=guarded_protocol(...)`)."""
    # a connection or request task still open at exit is cancelled after a short grace
    # rather than waited on (a loaded test run once held a stop for the whole join timeout)
    settings = {
        "log_level": "warning",
        "lifespan": "on",
        "timeout_graceful_shutdown": SHUTDOWN_GRACE_S,
        **settings,
    }
    config = uvicorn.Config(app, host=host, port=port, **settings)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="textenvs-service", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the service did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        # leaving on Ctrl-C or an error: no grace for the requests in flight
        server.force_exit = sys.exc_info()[0] is not None
        thread.join(timeout)
        if thread.is_alive():  # still waiting for connections or tasks: stop anyway
            server.force_exit = True
            thread.join(timeout)
