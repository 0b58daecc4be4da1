"""The FastAPI app: every textenvs scenario as sessions over HTTP (`/v1`).

Env steps take microseconds, so they run inline in the event loop (no thread hop); each
session's lock keeps concurrent requests on one session in order. Every error is JSON
`{"error": {"code", "message", "details"}}`; user text is never echoed raw and exception
text never leaves the server (a generic 500 handler).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Path, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import ValidationError
from pydantic_core import to_json
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from textenvs import __version__
from textenvs.core import registry
from textenvs.core.parsing import excerpt
from textenvs.service.models import (
    SESSION_ID_PATTERN,
    CreateSession,
    ErrorResponse,
    Health,
    ResetSession,
    ScenarioInfo,
    ScenarioList,
    SessionCreated,
    SessionView,
    StepRequest,
    StepResult,
)
from textenvs.service.sessions import ServiceError, Session, SessionStore

log = logging.getLogger("textenvs.service")

DEFAULT_MAX_BODY_BYTES = 256 * 1024  # a maximal command, JSON-escaped, fits with room
# Statuses every route may answer with, documented in the OpenAPI schema.
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 404, 409, 413, 422, 503)
}
SessionId = Annotated[
    str, Path(pattern=SESSION_ID_PATTERN, description="the id returned when the session was made")
]


def safe(text: str, limit: int = 300) -> str:
    """User-influenced text made printable ASCII and short before it goes in a response."""
    return excerpt(text, limit)


def error_response(
    status: int, code: str, message: str, details: list[dict[str, Any]] | None = None, **kw: Any
) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "details": details or []}}
    return JSONResponse(body, status_code=status, **kw)


def json_response(data: dict[str, Any], status: int = 200) -> Response:
    """Compact JSON, encoded once in Rust (no model validation, no jsonable_encoder)."""
    return Response(to_json(data), status_code=status, media_type="application/json")


class BodyLimit:
    """Pure ASGI middleware: bodies over `max_bytes` get a 413 before any parsing."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                if not value.isdigit():
                    await error_response(400, "bad_request", "invalid Content-Length")(
                        scope, receive, send
                    )
                    return
                if int(value) > self.max_bytes:
                    await self.too_big(scope, receive, send)
                    return
                # The server delivers at most Content-Length bytes: no need to count them.
                await self.app(scope, receive, send)
                return
        # Read the body (bounded) so chunked uploads are limited too, then replay it.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self.too_big(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def too_big(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        message = f"request bodies are limited to {self.max_bytes} bytes"
        return error_response(413, "payload_too_large", message)(scope, receive, send)


def bearer_auth(token: str) -> Callable[..., Awaitable[None]]:
    expected = token.encode("utf-8")
    scheme = HTTPBearer(auto_error=False, description="the token from --token-env")

    # A default, not Annotated: the annotation is a string and `scheme` is local.
    async def check(
        credentials: HTTPAuthorizationCredentials | None = Depends(scheme),  # noqa: B008
    ) -> None:
        given = credentials.credentials.encode("utf-8") if credentials else b""
        if not hmac.compare_digest(given, expected):
            raise ServiceError(
                401,
                "unauthorized",
                "a valid 'Authorization: Bearer <token>' header is required",
                headers={"WWW-Authenticate": "Bearer"},
            )

    return check


def scenario_info(scenario: registry.Scenario) -> ScenarioInfo:
    cls = scenario.load()
    try:
        from textenvs.prompts import rules_text

        rules = rules_text(scenario.name)
    except FileNotFoundError:  # a scenario whose rules text is not written yet
        rules = ""
    return ScenarioInfo(
        name=scenario.name,
        env_id=scenario.env_id,
        title=scenario.title,
        version=str(cls.version),
        max_steps=int(cls.max_steps),
        rules=rules,
        action_schema=cls.action_schema.model_json_schema(),
    )


def _validation_details(errors: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "loc": [p if isinstance(p, int) else safe(str(p), 60) for p in e.get("loc", ())],
            "msg": safe(str(e.get("msg", "")), 300),
            "type": safe(str(e.get("type", "")), 60),
        }
        for e in errors[:20]
    ]


def create_app(
    *,
    max_sessions: int = 1000,
    idle_timeout: float = 600.0,
    token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """The service app. `token` set means every route but health needs a bearer token."""
    store = SessionStore(max_sessions=max_sessions, idle_timeout=idle_timeout)
    catalogue: dict[str, ScenarioInfo] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        reaper = asyncio.create_task(store.reap_forever())
        try:
            yield
        finally:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper
            store.clear()

    app = FastAPI(
        title="textenvs",
        version=__version__,
        description="Text environments for LLM agents, as HTTP sessions. See docs/service.md.",
        lifespan=lifespan,
    )
    app.state.store = store
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.details, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(400, "malformed_json", "the request body is not valid JSON")
        return error_response(
            422, "invalid_request", "the request is invalid", _validation_details(errors)
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # FastAPI's "error parsing the body" (e.g. not UTF-8)
            return error_response(400, "malformed_json", "the request body is not valid JSON")
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(
            exc.status_code, code, safe(str(exc.detail)), headers=getattr(exc, "headers", None)
        )

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error", "internal server error")

    @app.get("/v1/health", response_model=Health, tags=["service"])
    async def health() -> Health:
        return Health(
            status="ok", version=__version__, sessions=len(store), max_sessions=max_sessions
        )

    deps = [Depends(bearer_auth(token))] if token else []
    v1 = APIRouter(prefix="/v1", dependencies=deps, responses=ERRORS)

    def info_for(name: str) -> ScenarioInfo:
        try:
            scenario = registry.get(name)
        except registry.UnknownEnvError as exc:
            raise ServiceError(404, "unknown_env", safe(exc.message, 400)) from None
        if scenario.name not in catalogue:
            catalogue[scenario.name] = scenario_info(scenario)
        return catalogue[scenario.name]

    def live(session_id: str) -> Session:
        return store.get(session_id)

    @v1.get("/envs", response_model=ScenarioList, tags=["scenarios"])
    async def list_envs() -> ScenarioList:
        """Every scenario: metadata, rules text and the JSON schema of a structured action."""
        return ScenarioList(envs=[info_for(name) for name in registry.names()])

    @v1.get("/envs/{env}", response_model=ScenarioInfo, tags=["scenarios"])
    async def get_env(env: str = Path(max_length=100)) -> ScenarioInfo:
        return info_for(env)

    def reset_env(session_env: Any, env: str, seed: int | None, options: Any) -> tuple:
        seed = secrets.randbelow(2**31) if seed is None else seed
        try:
            observation, info = session_env.reset(seed=seed, options=options)
        except (ValueError, TypeError, KeyError) as exc:
            # Scenarios reject bad options with a message meant for the caller.
            raise ServiceError(
                422, "invalid_options", safe(f"{env} rejected the options: {exc}", 400)
            ) from None
        return seed, observation, info

    @v1.post("/sessions", status_code=201, response_model=SessionCreated, tags=["sessions"])
    async def create_session(body: CreateSession) -> SessionCreated:
        """A new session playing `env` from `seed`; returns its id and first observation."""
        name = info_for(body.env).name
        store.reserve()
        env = registry.make(name)
        seed, observation, info = reset_env(env, name, body.seed, body.options)
        session = Session(store.new_id(), name, env, seed, observation, info)
        store.add(session)
        return SessionCreated(
            session_id=session.id, env=name, seed=seed, observation=observation, info=info
        )

    @v1.get("/sessions/{session_id}", response_model=SessionView, tags=["sessions"])
    async def get_session(session_id: SessionId) -> SessionView:
        """The session's current observation and info (does not step)."""
        session = live(session_id)
        session.touch()
        return _view(session)

    # The hot path returns ready-made JSON: `response_model` documents it, FastAPI neither
    # validates nor re-encodes it (a returned Response is sent as is).
    @v1.post("/sessions/{session_id}/step", response_model=StepResult, tags=["sessions"])
    async def step(body: StepRequest, session_id: SessionId) -> Response:
        """One turn, from free-text `command` or structured `action`. An unreadable command
        is a wasted turn (as in the local env); a malformed request changes nothing."""
        session = live(session_id)
        async with session.lock:
            live(session_id)  # it may have been deleted while we waited
            env = session.env
            if env.done:
                raise ServiceError(409, "episode_over", "the episode has ended: reset first")
            command = body.command if body.action is None else _command(env, body.action)
            observation, reward, terminated, truncated, info = env.step(command)
            session.observation, session.info = observation, info
            session.touch()
        return json_response(
            {
                "observation": observation,
                "reward": float(reward),
                "terminated": bool(terminated),
                "truncated": bool(truncated),
                "info": info,
            }
        )

    @v1.post("/sessions/{session_id}/reset", response_model=SessionView, tags=["sessions"])
    async def reset(body: ResetSession, session_id: SessionId) -> SessionView:
        """Start a new episode in the same session (same env)."""
        session = live(session_id)
        async with session.lock:
            live(session_id)
            seed, observation, info = reset_env(
                session.env, session.env_name, body.seed, body.options
            )
            session.seed, session.observation, session.info = seed, observation, info
            session.touch()
        return _view(session)

    @v1.delete("/sessions/{session_id}", status_code=204, tags=["sessions"])
    async def delete_session(session_id: SessionId) -> Response:
        store.remove(session_id)
        return Response(status_code=204)

    app.include_router(v1)
    return app


def _command(env: Any, action: dict[str, Any]) -> str:
    try:
        return str(env.command_for(action))
    except ValidationError as exc:
        raise ServiceError(
            422,
            "invalid_action",
            "the action does not match the scenario's action schema",
            details=_validation_details(exc.errors()),
        ) from None
    except (ValueError, TypeError) as exc:
        raise ServiceError(422, "invalid_action", safe(str(exc))) from None


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
