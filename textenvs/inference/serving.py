"""Serve a trained checkpoint as an OpenAI-compatible chat endpoint, for `textenvs eval`.

A checkpoint is evaluated like any model: `textenvs eval --agent llm --model DIR` starts
this server on loopback and plays through the same runner, agent, parser and report.
The requests of the episodes in flight are answered together by one `engine.Engine`.

Routes: `GET /v1/models` (the model and its context, `max_model_len`, which the agent's
preflight reads), `POST /v1/chat/completions` (text replies, JSON held to the schema of
a `response_format` in either form the `llm` agent sends, or calls of the request's
`tools` where the chat template renders them (`tool_calls.py`); no streaming: a request
asking for it is refused with a 400 that says so).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from textenvs.agents.llm import json_mode
from textenvs.inference import models, tool_calls
from textenvs.inference.chat import ChatTokens
from textenvs.inference.engine import ContextOverflow, Engine
from textenvs.inference.generation import Sampling

# ----- the HTTP front -----------------------------------------------------------------


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = ""
    messages: list[dict[str, Any]] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, gt=0)
    max_completion_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    n: int = 1
    stream: bool = False


UNSUPPORTED = ("functions", "logit_bias")


def _schema_of(extra: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request's `response_format` asks for (None: plain text)."""
    field = extra.get("response_format")
    if not field or field.get("type") == "text":
        return None
    if field.get("type") not in ("json_schema", "json_object"):
        raise ValueError(f"type {field.get('type')!r} (json_schema, json_object or text)")
    return json_mode.schema_of(field) or {"type": "object"}


def create_app(engine: Engine, model_name: str, *, default_max_tokens: int = 256) -> FastAPI:
    app = FastAPI(title="textenvs checkpoint server", docs_url=None, redoc_url=None)
    tools_rendered = tool_calls.renders_tools(engine.chat)

    def refuse(status: int, message: str, code: str) -> JSONResponse:
        body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
        return JSONResponse(body, status_code=status)

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        entry = {
            "id": model_name,
            "object": "model",
            "owned_by": "textenvs",
            "max_model_len": engine.context_window,
        }
        return {"object": "list", "data": [entry]}

    @app.post("/v1/chat/completions")
    def chat_completions(request: ChatRequest) -> Any:
        asked = [name for name in UNSUPPORTED if (request.model_extra or {}).get(name)]
        if asked or request.stream or request.n != 1:
            what = ", ".join(
                asked + (["stream"] if request.stream else []) + (["n"] if request.n != 1 else [])
            )
            return refuse(
                400, f"this server answers plain text replies only (not: {what})", "unsupported"
            )
        try:
            schema = _schema_of(request.model_extra or {})
        except ValueError as exc:
            return refuse(400, f"response_format: {exc}", "unsupported")
        try:
            tools = tool_calls.requested(request.model_extra or {}, rendered=tools_rendered)
        except tool_calls.ToolRequestError as exc:
            return refuse(400, str(exc), "unsupported")
        sampling = Sampling(
            max_new_tokens=request.max_completion_tokens
            or request.max_tokens
            or default_max_tokens,
            temperature=1.0 if request.temperature is None else request.temperature,
            top_p=1.0 if request.top_p is None else request.top_p,
        )
        try:
            messages = tool_calls.template_messages(request.messages)
            done = engine.complete(messages, sampling, schema, tools)
        except ContextOverflow as exc:
            return refuse(400, str(exc), "context_length_exceeded")
        except ValueError as exc:  # a schema the grammar compiler cannot use
            return refuse(400, f"response_format: {exc}", "unsupported")
        message, finish_reason = tool_calls.reply_message(done.text, done.finish_reason, tools)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model_name,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": done.prompt_tokens,
                "completion_tokens": done.completion_tokens,
                "total_tokens": done.prompt_tokens + done.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": done.cached_tokens},
            },
        }

    return app


@contextlib.contextmanager
def serve(
    model_dir: str, *, slots: int = 8, seed: int = 0, cache_mb: int | None = None
) -> Iterator[str]:
    """Serve the model in `model_dir` on loopback while the block runs, its conversations'
    keys and values within `cache_mb` (`budget.default_mb`); yields the base URL of its
    OpenAI-compatible API (`.../v1`)."""
    from textenvs.service.background import serve_in_thread

    models.quiet_libraries()
    model, tokenizer = models.load(model_dir)
    if torch.cuda.is_available():  # a GPU answers the episodes' requests, as it trains
        model.to("cuda")
    engine = Engine(
        model,
        ChatTokens(tokenizer),
        slots=slots,
        context_window=models.context_window(model),
        seed=seed,
        cache_mb=cache_mb,
    )
    try:
        with serve_in_thread(create_app(engine, Path(model_dir).name)) as url:
            yield f"{url}/v1"
    finally:
        engine.close()
