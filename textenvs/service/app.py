"""The FastAPI app: every textenvs scenario as sessions over HTTP (`/v1`), plus
OpenEnv-compatible endpoints (`/openenv/{env}`, see `textenvs.service.openenv`).

Commands are read in worker threads or processes with a time limit (`reading`), never on
the event loop; the rules then step on the loop (microseconds). Each session's lock keeps
concurrent requests on one session in order. Sessions belong to the
client (credential) that created them. Every error is JSON `{"error": {"code", "message",
"details"}}`; user text is never echoed raw and exception text never leaves the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic_core import to_json
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from textenvs import __version__
from textenvs.core import registry
from textenvs.service.memory import SessionFreezer
from textenvs.service.models import (
    ERRORS,
    MAX_SEED,
    SESSION_ID_PATTERN,
    CreateSession,
    Health,
    LabelledSessions,
    ResetSession,
    ScenarioInfo,
    ScenarioList,
    SessionCreated,
    SessionsDeleted,
    SessionView,
    StepRequest,
    StepResult,
)
from textenvs.service.operations import Operations, safe, validation_details
from textenvs.service.reading import DEFAULT_TIMEOUT_S, CommandReader
from textenvs.service.sessions import ServiceError, Session, SessionStore
from textenvs.service.tenancy import AdmittedRoute, Client, ClientLimits, Credentials, admits
from textenvs.service.transport.guards import (
    LOOPBACK_NAMES,
    REFUSAL_PAUSE_S,
    Guard,
    error_response,
    service_error_response,
)
from textenvs.service.transport.logs import hide_query_strings
from textenvs.service.transport.sockets import DEFAULT_SOCKET_IDLE_S, SocketCount, socket_limits

log = logging.getLogger("textenvs.service")

DEFAULT_MAX_BODY_BYTES = 256 * 1024  # a maximal command, JSON-escaped, fits with room
SessionId = Annotated[
    str, Path(pattern=SESSION_ID_PATTERN, description="the id returned when the session was made")
]


def json_response(data: dict[str, Any], status: int = 200) -> Response:
    """Compact JSON, encoded once in Rust (no model validation, no jsonable_encoder)."""
    return Response(to_json(data), status_code=status, media_type="application/json")


def create_app(
    *,
    max_sessions: int = 1000,
    idle_timeout: float = 600.0,
    max_lifetime: float = 7200.0,
    token: str | None = None,
    tokens: dict[str, str] | None = None,
    limits: ClientLimits | None = None,
    allowed_hosts: Iterable[str] | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    command_timeout: float = DEFAULT_TIMEOUT_S,
    max_connections: int = 1024,
    socket_idle_timeout: float = DEFAULT_SOCKET_IDLE_S,
    freeze_gc: bool = False,
    refusal_pause: float = REFUSAL_PAUSE_S,
) -> FastAPI:
    """The service app.

    `tokens` maps client names to bearer tokens (`token` alone is the client `default`);
    with any, every route but health needs one, and sessions are private to their client.
    Without tokens the server answers only for `allowed_hosts` (loopback names by default;
    `"*"` allows any). `limits` apply to each client; `max_sessions` to the whole server.
    Applications mount onto it from outside (the play page: `textenvs.play.page`), through
    `app.state`: `ops` (the session operations), `clients` (how many clients share the
    server) and `on_stop` (coroutines awaited when it stops, after every session closed).
    A command not read within `command_timeout` seconds is a 422 that changes nothing.
    WebSockets take at most three quarters of `max_connections`, each client its share,
    and each client's requests in flight that share too. Refusals (401, 429, and 503 when
    the server is full) are answered after `refusal_pause` seconds (see `transport/guards.py`).
    `freeze_gc` keeps long-lived objects out of garbage collections (process-wide, for a
    server process of its own: see `memory.py`).
    """
    tokens = dict(tokens or {})
    if token:
        tokens.setdefault("default", token)
    credentials = Credentials(tokens)
    limits = limits or ClientLimits()
    # By default no client can take more than its even share of the server's capacity.
    per_client = limits.max_sessions or max(1, max_sessions // max(1, len(tokens)))
    store = SessionStore(
        max_sessions=max_sessions,
        idle_timeout=idle_timeout,
        max_lifetime=max_lifetime,
        max_per_owner=per_client if per_client < max_sessions else 0,  # 0: the server's cap
    )
    ops = Operations(store, limits, CommandReader(command_timeout), max_body_bytes)
    ops.freezer = SessionFreezer() if freeze_gc else None
    on_stop: list[Callable[[], Awaitable[None]]] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        hide_query_strings()  # after uvicorn configured its loggers
        reaper = asyncio.create_task(store.reap_forever())
        if ops.freezer is not None:
            ops.freezer.start()
        try:
            yield
        finally:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper
            store.clear()
            ops.reader.close()
            if ops.freezer is not None:
                ops.freezer.stop()
            for stop in on_stop:
                await stop()

    app = FastAPI(
        title="textenvs",
        version=__version__,
        description="Text environments for LLM agents, as HTTP sessions. See docs/service.md.",
        lifespan=lifespan,
    )
    app.state.store = store
    app.state.credentials = credentials
    app.state.ops = ops
    app.state.clients = max(1, len(tokens))
    app.state.on_stop = on_stop
    hosts = None
    if not credentials.required:
        hosts = frozenset(h.lower() for h in (allowed_hosts or ())) | LOOPBACK_NAMES
    sockets_in_all, per_client_share = socket_limits(max_connections, len(tokens))
    app.add_middleware(
        Guard,
        max_bytes=max_body_bytes,
        credentials=credentials,
        in_flight=per_client_share,
        bodies=ops.bodies,
        turns=ops.turns,
        allowed_hosts=hosts,
        pause=refusal_pause,
    )
    _handle_errors(app)

    @app.get(
        "/v1/health", response_model=Health, response_model_exclude_none=True, tags=["service"]
    )
    async def health(request: Request) -> Health:
        """Whether the server answers, for anyone; with a valid token (or on a server
        without tokens) also the caller's own open sessions and how many it may hold.
        Nothing about other clients."""
        try:
            client = credentials.client_for(request.headers.get("authorization"))
        except ServiceError:
            return Health(status="ok", version=__version__)
        return Health(
            status="ok",
            version=__version__,
            sessions=store.held_by(client),
            max_sessions=store.owner_cap,
        )

    v1 = APIRouter(prefix="/v1", responses=ERRORS, route_class=AdmittedRoute)

    @v1.get("/envs", response_model=ScenarioList, tags=["scenarios"])
    async def list_envs(client: Client) -> ScenarioList:
        """Every scenario: metadata, rules text and the JSON schema of a structured action."""
        await ops.reads.turn(client)
        return ScenarioList(envs=[ops.info(name) for name in registry.names()])

    @v1.get("/envs/{env}", response_model=ScenarioInfo, tags=["scenarios"])
    async def get_env(client: Client, env: str = Path(max_length=100)) -> ScenarioInfo:
        await ops.reads.turn(client)
        return ops.info(env)

    @v1.post("/sessions", status_code=201, response_model=SessionCreated, tags=["sessions"])
    @admits(ops.admit)
    async def create_session(body: CreateSession, client: Client) -> SessionCreated:
        """A new session playing `env` from `seed`; returns its id and first observation.
        A `label` names it for `DELETE /v1/sessions?label=` (a run's sessions, say)."""
        session = ops.create(client, body.env.value, body.seed, body.options, label=body.label)
        return SessionCreated(
            session_id=session.id,
            env=session.env_name,
            seed=session.seed,
            observation=session.observation,
            info=session.info,
        )

    @v1.get("/sessions/{session_id}", response_model=SessionView, tags=["sessions"])
    async def get_session(session_id: SessionId, client: Client) -> SessionView:
        """The session's current observation and info (does not step, and does not count
        as use: only steps and resets keep a session from expiring)."""
        await ops.reads.turn(client)
        return _view(store.get(session_id, client))

    # The hot path returns ready-made JSON: `response_model` documents it, FastAPI neither
    # validates nor re-encodes it (a returned Response is sent as is).
    @v1.post("/sessions/{session_id}/step", response_model=StepResult, tags=["sessions"])
    @admits(ops.steps.turn)
    async def step(body: StepRequest, session_id: SessionId, client: Client) -> Response:
        """One turn, from free-text `command` or structured `action`. An unreadable command
        is a wasted turn (as in the local env); a malformed request changes nothing."""
        return json_response(await ops.step(client, session_id, body.command, body.action))

    @v1.post("/sessions/{session_id}/reset", response_model=SessionView, tags=["sessions"])
    @admits(ops.resets.turn)
    async def reset(body: ResetSession, session_id: SessionId, client: Client) -> SessionView:
        """Start a new episode in the same session (same env)."""
        return _view(await ops.reset(client, session_id, body.seed, body.options))

    @v1.delete("/sessions/{session_id}", status_code=204, tags=["sessions"])
    async def delete_session(session_id: SessionId, client: Client) -> Response:
        store.remove(session_id, client)
        return Response(status_code=204)

    @v1.delete("/sessions", response_model=SessionsDeleted, tags=["sessions"])
    async def delete_labelled(
        query: Annotated[LabelledSessions, Query()], client: Client
    ) -> SessionsDeleted:
        """Delete every session of this client created with `label` (e.g. what a killed
        eval left open, so that its resume need not wait for them to expire)."""
        return SessionsDeleted(deleted=store.remove_labelled(query.label, client))

    app.include_router(v1)
    from textenvs.service.openenv import openenv_router

    sockets = SocketCount(sockets_in_all, per_client_share, socket_idle_timeout, refusal_pause)
    app.include_router(openenv_router(ops, sockets))
    _integral_schema_numbers(app)
    return app


def _handle_errors(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return service_error_response(exc)  # a 429 or 503 waits out its pause in the guard

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(400, "malformed_json", "the request body is not valid JSON")
        return error_response(
            422, "invalid_request", "the request is invalid", validation_details(errors)
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # FastAPI's "error parsing the body" (e.g. not UTF-8)
            return error_response(400, "malformed_json", "the request body is not valid JSON")
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(_allowed_methods(request))
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, safe(str(exc.detail)), headers=headers)


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (Starlette names only the first
    route's, so `/v1/sessions/{id}` said `Allow: GET` without DELETE)."""
    return [
        method
        for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL
            for route in request.app.router.routes
        )
    ]


def _integral_schema_numbers(app: FastAPI) -> None:
    """FastAPI's OpenAPI models hold bounds as floats (2**63-1 became 9.2e18, which is
    not even the same number): write whole numbers as the integers they were."""
    build = app.openapi

    def fix(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: fix(v) for k, v in node.items()}
        if isinstance(node, list):
            return [fix(v) for v in node]
        if isinstance(node, float) and node.is_integer():
            return MAX_SEED if node == float(MAX_SEED) else int(node)
        return node

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = fix(build())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _view(session: Session) -> SessionView:
    return SessionView(
        session_id=session.id,
        env=session.env_name,
        seed=session.seed,
        observation=session.observation,
        info=session.info,
        done=session.env.done,
        steps_used=session.env.steps_used,
    )
