"""`textenvs serve`: the HTTP environment service (FastAPI under uvicorn)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import resource
import socket
import sys

from textenvs.cli.command import Command
from textenvs.cli.web import add_record_arguments, recorder_from_args
from textenvs.core.numbers import (
    bounded,
    non_negative_float,
    port,
    positive_float,
    positive_int,
)
from textenvs.service.models import DEFAULT_MAX_HEADER_BYTES, DEFAULT_PATIENCE_S
from textenvs.service.reading import DEFAULT_TIMEOUT_S
from textenvs.service.transport.sockets import DEFAULT_SOCKET_IDLE_S


def _default_max_connections() -> int:
    """Well under the file-descriptor limit, so accepting never fails for want of one."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(16, min(4096, soft - 64))


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="interface to bind")
    p.add_argument("--port", type=port, default=8000, help="TCP port (0 picks a free one)")
    auth = p.add_argument_group("clients and tokens")
    auth.add_argument(
        "--token-env",
        metavar="VAR",
        default=None,
        help="name of an environment variable holding a bearer token that clients must send "
        "('Authorization: Bearer <token>'); its client is named 'default'",
    )
    auth.add_argument(
        "--token-file",
        metavar="FILE",
        default=None,
        help="a file of 'name token' lines, one client each (tokens of 16+ characters); "
        "each client sees only its own sessions",
    )
    auth.add_argument(
        "--allowed-host",
        metavar="NAME",
        action="append",
        default=[],
        help="without tokens, Host names served besides localhost, 127.0.0.1 and ::1 "
        "(repeatable; '*' allows any); stops DNS-rebinding pages reaching the server",
    )
    limits = p.add_argument_group("sessions and limits")
    limits.add_argument(
        "--max-sessions", type=positive_int, default=1000, help="live sessions in all"
    )
    limits.add_argument(
        "--client-max-sessions",
        type=bounded(int, 0),
        default=0,
        help="live sessions per client (0: --max-sessions shared evenly between the clients)",
    )
    limits.add_argument(
        "--creates-per-minute",
        type=non_negative_float,
        default=1200,
        help="session creations per client per minute, refilling steadily; as many at once "
        "as the client may hold sessions (0: no limit)",
    )
    limits.add_argument(
        "--resets-per-minute",
        type=non_negative_float,
        default=1200,
        help="session resets per client per minute (HTTP, OpenEnv and WebSocket; the "
        "stateless OpenEnv reset too), refilling steadily; as many at once as the client "
        "may hold sessions (0: no limit)",
    )
    limits.add_argument(
        "--steps-per-second",
        type=non_negative_float,
        default=5000,
        help="steps per client per second (0: no limit); over a rate waits its turn "
        "(--rate-patience)",
    )
    limits.add_argument(
        "--reads-per-second",
        type=non_negative_float,
        default=20,
        help="GET requests per client per second for scenarios, sessions and the play "
        "page's setup and progress (0: no limit)",
    )
    limits.add_argument(
        "--body-bytes-per-second",
        type=non_negative_float,
        default=1024 * 1024,
        help="request body and WebSocket message bytes per client per second, as a burst "
        "of a second's allowance or 16 largest bodies (0: no limit)",
    )
    limits.add_argument(
        "--rate-patience",
        type=non_negative_float,
        default=DEFAULT_PATIENCE_S,
        help="seconds a request or WebSocket message over one of the rates above waits its "
        "turn before it is refused with 429 and Retry-After (0: refused at once)",
    )
    limits.add_argument(
        "--idle-timeout",
        type=non_negative_float,
        default=600.0,
        help="seconds without a step or reset before a session is dropped (0 disables)",
    )
    limits.add_argument(
        "--max-lifetime",
        type=non_negative_float,
        default=7200.0,
        help="seconds after creation when a session is dropped however busy (0 disables)",
    )
    conn = p.add_argument_group("connections")
    conn.add_argument(
        "--max-body-bytes",
        type=positive_int,
        default=256 * 1024,
        help="larger request bodies get 413, larger WebSocket messages close the socket (1009)",
    )
    conn.add_argument(
        "--max-header-bytes",
        type=positive_int,
        default=DEFAULT_MAX_HEADER_BYTES,
        help="larger request lines and headers get 431 and the connection closes",
    )
    conn.add_argument(
        "--request-timeout",
        type=positive_float,
        default=10.0,
        help="seconds to receive a request's headers and body; slower clients are cut off",
    )
    conn.add_argument(
        "--keep-alive-timeout",
        type=positive_int,
        default=5,
        help="seconds an idle keep-alive connection stays open",
    )
    conn.add_argument(
        "--max-connections",
        type=positive_int,
        default=_default_max_connections(),
        help="open connections at most (WebSockets included; default: below the "
        "file-descriptor limit); over it, a connection holding only a refused request, else "
        "the one waiting longest for its request, is closed; each client's WebSockets and "
        "requests in flight take at most its share of three quarters of it",
    )
    conn.add_argument(
        "--command-timeout",
        type=positive_float,
        default=DEFAULT_TIMEOUT_S,
        help="seconds a command may take to read (off the event loop); slower is a 422 "
        "command_too_slow that changes nothing",
    )
    conn.add_argument(
        "--socket-idle-timeout",
        type=positive_float,
        default=DEFAULT_SOCKET_IDLE_S,
        help="seconds an OpenEnv WebSocket may go without a message before it is closed "
        f"(code 1001; default {DEFAULT_SOCKET_IDLE_S:g})",
    )
    add_record_arguments(p)
    server = p.add_argument_group("server")
    server.add_argument("--log-level", default="info", help="uvicorn log level")
    server.add_argument(
        "--http",
        choices=["auto", "httptools", "h11"],
        default="auto",
        help="HTTP parser (auto: httptools when installed, else the pure-Python h11)",
    )
    server.add_argument(
        "--loop",
        choices=["auto", "uvloop", "asyncio"],
        default="auto",
        help="event loop (auto: uvloop when installed)",
    )
    server.add_argument("--access-log", action="store_true", help="log every request")


def _fail(message: str) -> int:
    print(f"textenvs serve: error: {message}", file=sys.stderr)
    return 2


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from textenvs.play.page import create_app
    from textenvs.service.tenancy import ClientLimits, CredentialError, read_token_file
    from textenvs.service.transport.connections import uvicorn_settings

    taken = _port_taken(args.host, args.port)
    if taken:
        return _fail(taken)
    tokens: dict[str, str] = {}
    if args.token_file:
        try:
            tokens = read_token_file(args.token_file)
        except CredentialError as exc:
            return _fail(str(exc))
    if args.token_env:
        token = os.environ.get(args.token_env, "")
        if not token:
            return _fail(f"${args.token_env} is unset or empty; export the token in it first")
        if "default" in tokens or token in tokens.values():
            return _fail(
                "--token-env repeats a client name or token of --token-file; give the token once"
            )
        tokens["default"] = token
    try:
        recorder = recorder_from_args(args)
    except ValueError as exc:
        return _fail(str(exc))
    if not tokens and not _is_loopback(args.host):
        print(
            f"textenvs serve: warning: binding {args.host} without a token; anyone who "
            "can reach this port can create sessions (and only --allowed-host names are "
            "served)",
            file=sys.stderr,
        )
    app = create_app(
        max_sessions=args.max_sessions,
        idle_timeout=args.idle_timeout,
        max_lifetime=args.max_lifetime,
        tokens=tokens,
        limits=ClientLimits(
            max_sessions=args.client_max_sessions,
            creates_per_minute=args.creates_per_minute,
            resets_per_minute=args.resets_per_minute,
            steps_per_second=args.steps_per_second,
            reads_per_second=args.reads_per_second,
            body_bytes_per_second=args.body_bytes_per_second,
            patience=args.rate_patience,
        ),
        allowed_hosts=args.allowed_host,
        max_body_bytes=args.max_body_bytes,
        recorder=recorder,
        command_timeout=args.command_timeout,
        max_connections=args.max_connections,
        socket_idle_timeout=args.socket_idle_timeout,
        freeze_gc=True,  # a process of its own: long-lived sessions skip GC (memory.py)
    )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=args.access_log,
        loop=args.loop,
        **uvicorn_settings(
            args.http,
            request_timeout=args.request_timeout,
            max_connections=args.max_connections,
            keep_alive_timeout=args.keep_alive_timeout,
            max_body_bytes=args.max_body_bytes,
            max_header_bytes=args.max_header_bytes,
        ),
    )
    return 0


def _port_taken(host: str, port: int) -> str | None:
    """Why `host:port` cannot be bound (None: it can), found before the app is built, so
    a port in use is one line rather than uvicorn's startup and then its bind error."""
    if port == 0:
        return None
    try:
        family, kind, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except OSError as exc:
        return f"--host {host}: cannot be resolved ({exc.strerror or exc})"
    with socket.socket(family, kind) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            return (
                f"cannot listen on {host}:{port} ({exc.strerror or exc}); stop what holds "
                "it, or give another --port (0 picks a free one)"
            )
    return None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


COMMAND = Command(
    "serve",
    help="serve every scenario over HTTP (see docs/service.md)",
    description="Serve every scenario as HTTP sessions under /v1 and as OpenEnv "
    "environments under /openenv/ENV (OpenAPI at /openapi.json, interactive docs at "
    "/docs; with tokens, every route but /v1/health and the play page's files needs "
    "one), with a page for people to play them at /play/. Binds to loopback unless "
    "told otherwise. Limits marked 'per client' apply "
    "to each credential (to everyone together when no token is set).",
    handler=_serve,
    arguments=_arguments,
    formatter_class=argparse.ArgumentDefaultsHelpFormatter,
)
