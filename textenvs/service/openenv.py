"""OpenEnv-compatible endpoints: `/openenv/{env}` is one OpenEnv environment server.

OpenEnv's client (`openenv-core`) takes a base URL and opens the WebSocket `{base}/ws`, so
`GenericEnvClient(base_url="http://host:8000/openenv/treasure-hunt")` plays Treasure Hunt.
One WebSocket is one session, created when it opens and deleted when it closes, counted
against its client's limits like any `/v1` session. Messages (JSON text frames):

    -> {"type": "reset", "data": {"seed": 3, "episode_id"?: "...", "options"?: {...}}}
    -> {"type": "step", "data": {"command": "north"}}    (or {"action": {...}})
    -> {"type": "state"}                                 -> {"type": "close"}
    <- {"type": "observation", "data": {"observation": {text, info, terminated,
        truncated}, "reward": r, "done": terminated or truncated}}
    <- {"type": "state", "data": {episode_id, step_count, env, seed, done}}
    <- {"type": "error", "data": {"message", "code"}}

The seed is honoured (same seed, same episode as local play); a reset without one draws a
random seed, which `state` reports. HTTP forms: `GET health`, `GET metadata`, `GET schema`,
and a stateless `POST reset` (the first observation of a seed); stepping needs a session,
so `POST step` and `GET state` answer 409 and point to the WebSocket. `GET openapi.json`
describes these endpoints relative to the prefix (the OpenEnv HTTP API, simulation mode:
reset, step and state), and `POST mcp` answers MCP's JSON-RPC 2.0 (`initialize`,
`tools/list`: no tools, since every action needs a session), so `openenv validate --url
http://host:8000/openenv/<scenario>` passes. The typed client is `openenv_client.py`.
Tokens: OpenEnv's client sends no headers, but a URL `ws://name:token@host/...` becomes a Basic
Authorization header, which the server accepts as well as `Bearer`. Every message counts
against its client's limits (a reset as a reset, any other as a step); one over a rate
waits its turn, and one past the patience is answered `rate_limited` after the same
pause as an HTTP 429 (the session and the socket go on).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

from fastapi import APIRouter, Depends, Path, WebSocket, WebSocketDisconnect
from fastapi import Request as FastAPIRequest
from fastapi.responses import Response
from pydantic import BaseModel, Field, ValidationError
from pydantic_core import to_json

from textenvs.core import registry
from textenvs.service.models import ERRORS, JsonObject, Request, Seed, StepRequest
from textenvs.service.operations import Operations, reset_env, safe
from textenvs.service.sessions import ServiceError, Session
from textenvs.service.tenancy import CLIENT, AdmittedRoute, admits, current_client
from textenvs.service.transport.sockets import MAX_MESSAGE_DEPTH, SocketCount, depth_at_most

EnvPath = Path(max_length=100, description="scenario name, e.g. 'treasure-hunt'")
#: the OpenEnv HTTP API these endpoints implement (`info.version` of their OpenAPI)
OPENENV_API_VERSION = "1.0.0"
PREFIX = "/openenv/{env}"
MCP_PROTOCOL_VERSION = "2025-06-18"


class OpenEnvReset(Request):
    seed: Seed = None
    episode_id: str | None = Field(default=None, max_length=255)
    options: JsonObject | None = None


class OpenEnvObservation(BaseModel):
    text: str
    info: dict[str, Any]
    terminated: bool = False
    truncated: bool = False


class OpenEnvResult(BaseModel):
    observation: OpenEnvObservation
    reward: float | None = None
    done: bool = False


class OpenEnvState(BaseModel):
    episode_id: str | None = None
    step_count: int = 0
    env: str
    seed: int
    done: bool


def _result(text: str, info: dict[str, Any], reward: float | None = None, **flags: bool) -> dict:
    terminated, truncated = flags.get("terminated", False), flags.get("truncated", False)
    observation = {"text": text, "info": info, "terminated": terminated, "truncated": truncated}
    return {"observation": observation, "reward": reward, "done": terminated or truncated}


def _error(code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "data": {"code": code, "message": message}}


def openenv_router(ops: Operations, sockets: SocketCount) -> APIRouter:
    router = APIRouter(prefix=PREFIX, tags=["openenv"], responses=ERRORS, route_class=AdmittedRoute)
    authenticated = [Depends(current_client)]

    @router.get("/health", dependencies=authenticated)
    async def health(env: str = EnvPath) -> dict[str, str]:
        ops.info(env)
        return {"status": "healthy"}

    @router.get("/metadata", dependencies=authenticated)
    async def metadata(env: str = EnvPath) -> dict[str, Any]:
        info = ops.info(env)
        return {
            "name": info.name,
            "description": info.title,
            "readme_content": info.rules,
            "version": info.version,
            "author": "textenvs",
            "documentation_url": None,
        }

    # Documents that never change, encoded once (JSON schemas took 5-20 ms to build: a
    # flood of them would have been a cheap way to load the server).
    documents: dict[tuple[str, str], bytes] = {}

    def document(kind: str, name: str, build: Any) -> Response:
        if (kind, name) not in documents:
            documents[kind, name] = to_json(build())
        return Response(documents[kind, name], media_type="application/json")

    @router.get("/schema", dependencies=authenticated, response_model=dict[str, Any])
    async def schema(env: str = EnvPath) -> Response:
        return document("schema", ops.info(env).name, openenv_schemas)

    @router.post("/reset", response_model=OpenEnvResult, dependencies=authenticated)
    @admits(ops.resets.turn)
    async def reset(body: OpenEnvReset | None = None, env: str = EnvPath) -> dict[str, Any]:
        """Stateless: the first observation of `seed`. Play through the WebSocket."""
        name = ops.info(env).name
        body = body or OpenEnvReset()
        scenario_env = registry.make(name)
        try:
            _, text, info = reset_env(scenario_env, name, body.seed, body.options)
        finally:
            scenario_env.close()
        return _result(text, info)

    @router.post("/step", dependencies=authenticated)
    @router.get("/state", dependencies=authenticated)
    async def needs_session(env: str = EnvPath) -> None:
        ops.info(env)
        raise ServiceError(
            409,
            "needs_session",
            "stepping needs a session: use the WebSocket at this path's '/ws' (OpenEnv's "
            "client does) or the /v1/sessions endpoints",
        )

    @router.get("/openapi.json", include_in_schema=False, dependencies=authenticated)
    async def openapi(request: FastAPIRequest, env: str = EnvPath) -> Response:
        """This scenario's OpenEnv endpoints, with paths relative to the prefix."""
        name = ops.info(env).name
        title = f"textenvs {name} (OpenEnv)"
        return document("openapi", name, lambda: openenv_openapi(request.app.openapi(), title))

    @router.post("/mcp", include_in_schema=False, dependencies=authenticated)
    async def mcp(request: FastAPIRequest, env: str = EnvPath) -> dict[str, Any]:
        """MCP over JSON-RPC 2.0; errors are JSON-RPC errors with status 200."""
        info = ops.info(env)
        try:
            message = json.loads(await request.body())
        except (ValueError, RecursionError):  # nested deeper than Python's JSON reader goes
            return _rpc_error(None, -32700, "parse error: the body is not JSON")
        return mcp_answer(message, info.name, info.version)

    @router.websocket("/ws")
    async def session_socket(websocket: WebSocket, env: str) -> None:
        client = websocket.scope[CLIENT]  # authenticated by the guard before the handshake
        try:
            name = ops.info(env).name
        except ServiceError:
            await websocket.close(code=1008)  # before accepting: the client sees a 403
            return
        await websocket.accept()
        try:
            with sockets.hold(client):
                await ops.turns.take(client)  # a create is a reset: clients take turns
                await ops.admit(client)  # waits its turn at the creation rate
                session = ops.create(client, name, None, None)
                try:
                    await SocketSession(ops, client, session, websocket, sockets).run()
                finally:
                    with contextlib.suppress(ServiceError):
                        ops.store.remove(session.id, client)
        except ServiceError as exc:  # over a limit: say which, then close
            await websocket.send_json(_error(exc.code, exc.message))
            await websocket.close(code=1013, reason=exc.code)
        except WebSocketDisconnect:
            pass

    return router


def openenv_schemas() -> dict[str, Any]:
    return {
        "action": StepRequest.model_json_schema(),
        "observation": OpenEnvObservation.model_json_schema(),
        "state": OpenEnvState.model_json_schema(),
    }


def openenv_openapi(document: dict[str, Any], title: str) -> dict[str, Any]:
    """The service's OpenAPI document cut down to the OpenEnv endpoints, their paths
    relative to `/openenv/{env}` (the scenario is part of the base URL)."""
    paths = {}
    for path, operations in document.get("paths", {}).items():
        if not path.startswith(PREFIX + "/"):
            continue
        paths[path.removeprefix(PREFIX)] = {
            method: {
                **operation,
                "parameters": [
                    p for p in operation.get("parameters", []) if p.get("name") != "env"
                ],
            }
            for method, operation in operations.items()
        }
    return {
        "openapi": document.get("openapi", "3.1.0"),
        "info": {"title": title, "version": OPENENV_API_VERSION},
        "paths": paths,
        "components": document.get("components", {}),
    }


def mcp_answer(message: Any, name: str, version: Any) -> dict[str, Any]:
    """The JSON-RPC 2.0 answer to one MCP request. The scenario offers no MCP tools:
    every action belongs to a session, which the WebSocket holds."""
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return _rpc_error(None, -32600, "invalid request: a JSON-RPC 2.0 object with a method")
    request_id, method = message.get("id"), message["method"]
    if not (request_id is None or isinstance(request_id, str | int | float)):
        return _rpc_error(None, -32600, "invalid request: an id is a string, number or null")
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": MCP_PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": f"textenvs-{name}", "version": str(version)},
        }
    elif method == "tools/list":
        result = {"tools": []}
    elif method == "ping":
        result = {}
    else:
        return _rpc_error(request_id, -32601, safe(f"method not found: {method}", 120))
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _rpc_error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class SocketSession:
    """The message loop of one OpenEnv WebSocket session."""

    def __init__(
        self,
        ops: Operations,
        client: str,
        session: Session,
        socket: WebSocket,
        sockets: SocketCount,
    ) -> None:
        self.ops, self.client, self.session, self.socket = ops, client, session, socket
        self.idle_timeout = sockets.idle_timeout
        self.refusal_pause = sockets.refusal_pause
        self.episode_id: str | None = None

    async def run(self) -> None:
        while True:
            session_left = self._time_left()
            wait = min(self.idle_timeout, session_left or self.idle_timeout)
            try:
                frame = await asyncio.wait_for(self.socket.receive(), wait)
            except TimeoutError:
                if session_left is not None and session_left <= wait:
                    await self._expire()
                else:
                    reason = f"no message for {self.idle_timeout:g} s"
                    await self.socket.close(code=1001, reason=reason)
                return
            if frame["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(frame.get("code", 1000))
            if frame.get("text") is None:  # a binary frame
                await self.socket.close(code=1003, reason="only JSON text frames are accepted")
                return
            await self.ops.turns.take(self.client)  # clients take turns (transport/fairness.py)
            try:
                reply = await self._reply(frame["text"])
            except ServiceError as exc:
                if exc.status == 429:  # as over HTTP: a refusal is answered after a pause
                    await asyncio.sleep(self.refusal_pause)
                reply = _error(exc.code, exc.message)
                if exc.code == "unknown_session":  # expired under us
                    await self.socket.send_json(reply)
                    await self.socket.close(code=1000)
                    return
            if reply is None:  # closed
                return
            await self.socket.send_json(reply)

    async def _reply(self, text: str) -> dict[str, Any] | None:
        """The answer to one message; None once the socket is closed."""
        await self.ops.bodies.turn(self.client, len(text))  # what reading it costs, before it
        try:
            message = json.loads(text)
            if not isinstance(message, dict):
                raise ValueError("not an object")
        except RecursionError:
            message = None
        except ValueError:
            await self.ops.steps.turn(self.client)  # a malformed message counts too
            return _error("INVALID_JSON", "the message is not JSON")
        if message is None or not depth_at_most(message, MAX_MESSAGE_DEPTH):
            reason = f"messages are nested at most {MAX_MESSAGE_DEPTH} deep"
            await self.socket.close(code=1009, reason=reason)
            return None
        if message.get("type") == "close":
            await self.socket.close()
            return None
        # Every other message counts (a malformed one too): a reset as a reset, any other
        # as a step; over the rate it waits its turn.
        kind = message.get("type")
        await (self.ops.resets if kind == "reset" else self.ops.steps).turn(self.client)
        try:
            request = self._request(message)
        except ValidationError as exc:
            first = exc.errors()[0] if exc.errors() else {}
            where = ".".join(str(p) for p in first.get("loc", ()))
            text = safe(f"invalid message ({where}): {first.get('msg', '')}", 300)
            return _error("VALIDATION_ERROR", text)
        return await self._answer(message["type"], request)

    def _request(self, message: dict[str, Any]) -> BaseModel | None:
        """The message's validated data (None for `state`)."""
        kind = message.get("type")
        data = message.get("data") or {}
        if not isinstance(data, dict):
            raise ServiceError(422, "VALIDATION_ERROR", "'data' must be an object")
        if kind == "reset":
            return OpenEnvReset.model_validate(data)
        if kind == "step":
            return StepRequest.model_validate(data)
        if kind == "state":
            return None
        raise ServiceError(422, "UNKNOWN_TYPE", safe(f"unknown message type: {kind!s}", 100))

    async def _answer(self, kind: str, request: BaseModel | None) -> dict[str, Any]:
        session_id = self.session.id
        if isinstance(request, OpenEnvReset):
            session = await self.ops.reset(self.client, session_id, request.seed, request.options)
            self.episode_id = request.episode_id
            return {"type": "observation", "data": _result(session.observation, session.info)}
        if isinstance(request, StepRequest):
            result = await self.ops.step(self.client, session_id, request.command, request.action)
            data = _result(
                result["observation"],
                result["info"],
                result["reward"],
                terminated=result["terminated"],
                truncated=result["truncated"],
            )
            return {"type": "observation", "data": data}
        session = self.ops.store.get(session_id, self.client)
        state = OpenEnvState(
            episode_id=self.episode_id,
            step_count=session.env.steps_used,
            env=session.env_name,
            seed=session.seed,
            done=session.env.done,
        )
        return {"type": "state", "data": state.model_dump()}

    def _time_left(self) -> float | None:
        """Seconds until the session would expire if no step or reset came."""
        store, now = self.ops.store, time.monotonic()
        limits = []
        if store.idle_timeout > 0:
            limits.append(self.session.last_used + store.idle_timeout - now)
        if store.max_lifetime > 0:
            limits.append(self.session.created + store.max_lifetime - now)
        return max(min(limits), 0.0) + 0.01 if limits else None

    async def _expire(self) -> None:
        message = "the session expired (idle timeout or maximum lifetime)"
        await self.socket.send_json(_error("unknown_session", message))
        await self.socket.close(code=1000)
