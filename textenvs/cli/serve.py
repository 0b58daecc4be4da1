"""`textenvs serve`: the HTTP environment service (FastAPI under uvicorn)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve every scenario over HTTP (see docs/service.md)",
        description="Serve every scenario as HTTP sessions under /v1 (OpenAPI at "
        "/openapi.json, interactive docs at /docs). Binds to loopback unless told otherwise.",
    )
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (0 picks a free one)")
    p.add_argument("--max-sessions", type=int, default=1000, help="live sessions allowed at once")
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=600.0,
        help="seconds without a request before a session is dropped (0 disables)",
    )
    p.add_argument(
        "--token-env",
        metavar="VAR",
        default=None,
        help="name of an environment variable holding a bearer token that clients must send "
        "('Authorization: Bearer <token>'); without it there is no auth",
    )
    p.add_argument(
        "--max-body-bytes", type=int, default=256 * 1024, help="larger request bodies get 413"
    )
    p.add_argument("--log-level", default="info", help="uvicorn log level")
    p.add_argument(
        "--http",
        choices=["auto", "httptools", "h11"],
        default="auto",
        help="HTTP parser (auto: httptools when installed, else the pure-Python h11)",
    )
    p.add_argument(
        "--loop",
        choices=["auto", "uvloop", "asyncio"],
        default="auto",
        help="event loop (auto: uvloop when installed)",
    )
    p.add_argument("--access-log", action="store_true", help="log every request (costs throughput)")
    p.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from textenvs.service.app import create_app

    token = None
    if args.token_env:
        token = os.environ.get(args.token_env, "")
        if not token:
            print(f"textenvs serve: error: ${args.token_env} is unset or empty", file=sys.stderr)
            return 2
    if args.max_sessions < 1:
        print("textenvs serve: error: --max-sessions must be at least 1", file=sys.stderr)
        return 2
    if token is None and not _is_loopback(args.host):
        print(
            f"textenvs serve: warning: binding {args.host} without --token-env; anyone who "
            "can reach this port can create sessions",
            file=sys.stderr,
        )
    app = create_app(
        max_sessions=args.max_sessions,
        idle_timeout=args.idle_timeout,
        token=token,
        max_body_bytes=args.max_body_bytes,
    )
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=args.access_log,
        http=args.http,
        loop=args.loop,
    )
    return 0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
