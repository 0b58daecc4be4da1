"""Serve a trained checkpoint as an OpenAI-compatible chat endpoint, for `textenvs eval`.

A checkpoint is evaluated like any model: `textenvs eval --agent llm --model DIR` starts
this server on loopback and plays through the same runner, agent, parser and report.
The requests of the episodes in flight are answered together: the engine keeps one
cache row ("slot") per conversation, so a request that extends a slot's last prompt
feeds only its new tokens (as prefix-caching servers do), and the replies of one round
are sampled in one batch, the round's new tokens packed into one sequence with no
padding (`ragged.RaggedSequences`); a round waits for the conversations of
the last rounds (`LOCKSTEP_WAIT_S`). A request that extends no slot takes the slot used
longest ago and keeps the tokens it shares with the slot's last conversation (the rules
every episode of a scenario starts with). In json mode the tokens the schema forces (all
of a reply but the command) are read in one pass with the tokens before them, not
sampled one pass each. A request's `seed` draws its reply from a generator of its own,
so a seeded reply does not depend on what shares its round or what came before it (the
`llm` agent seeds each request from `--llm-seed`, the episode and the request's place).

Routes: `GET /v1/models` (the model and its context, `max_model_len`, which the agent's
preflight reads), `POST /v1/chat/completions` (text replies, JSON held to the schema of
a `response_format` in either form the `llm` agent sends, or calls of the request's
`tools` where the chat template renders them (`tool_calls.py`); no streaming: a request
asking for it is refused with a 400 that says so).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from transformers import PreTrainedModel

from textenvs.agents.llm import json_mode
from textenvs.inference import models, ragged, tool_calls
from textenvs.inference.chat import ChatTokens
from textenvs.inference.generation import Sampling

#: how long the engine waits for more requests to join a round (seconds)
ROUND_WAIT_S = 0.02
#: how long it waits for the clients of the last rounds: clients in lockstep come back
#: together, and a round costs the whole batch's attention however few rows it feeds,
#: so a round started early costs a full round for a part of the work
LOCKSTEP_WAIT_S = 1.0
#: compact the cache when it is wider than its longest row by this fraction: every row
#: attends over the whole width, so each hidden column costs every row a column of work
COMPACT_SLACK = 0.25


class ContextOverflow(ValueError):
    def __init__(self, window: int, requested: int) -> None:
        super().__init__(
            f"This model's maximum context length is {window} tokens. However, you "
            f"requested {requested} tokens."
        )
        self.window = window
        self.requested = requested


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    cached_tokens: int = 0  # of the prompt, already in the slot (not fed again)


@dataclass
class _Request:
    prompt: str
    sampling: Sampling
    schema: dict[str, Any] | None = None
    #: the request's own sampling seed: its reply is drawn from it alone
    seed: int | None = None
    future: concurrent.futures.Future[Completion] = field(default_factory=concurrent.futures.Future)


@dataclass
class _Slot:
    text: str = ""  # what the slot's row holds, as text
    tokens: int = 0
    used: float = 0.0
    #: the last reply as the client will send it back, to read before the next segment
    refeed: list[int] = field(default_factory=list)


class Engine:
    """Answers chat requests with `model`, batching the requests that arrive together."""

    def __init__(
        self,
        model: PreTrainedModel,
        chat: ChatTokens,
        *,
        slots: int = 8,
        context_window: int = 8192,
        seed: int = 0,
    ) -> None:
        self.chat = chat
        self.context_window = context_window
        self.slots = [_Slot() for _ in range(slots)]
        self.sequences = ragged.sequences_for(
            model, slots, stop_ids=chat.stop_ids, pad_id=chat.tokenizer.pad_token_id, seed=seed
        )
        self._queue: queue.Queue[_Request | None] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="textenvs-engine", daemon=True)
        self._thread.start()

    def complete(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        schema: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        seed: int | None = None,
    ) -> Completion:
        """The model's reply to `messages`, held to the JSON `schema` if one is given, with
        `tools` rendered by the chat template (blocks until it is sampled). With a `seed`
        the reply is drawn from a generator of its own, whatever else shares its round;
        without one, from the engine's, whose draws depend on the order requests came in."""
        if schema is not None:
            self.chat.json_grammars().for_schema(schema)  # a bad schema fails here
        prompt = self.chat.render(messages, reply_next=True, tools=tools)
        request = _Request(prompt, sampling, schema, seed)
        self._queue.put(request)
        return request.future.result()

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)

    # ----- the engine's thread ------------------------------------------------------------

    def _serve(self) -> None:
        # the slots of the last two rounds: their clients will be back (two, so that
        # clients that fell into alternate rounds are gathered again)
        expected, last_rows = 1, set[int]()
        while (first := self._queue.get()) is not None:
            batch = [first]
            started = time.monotonic()
            while len(batch) < len(self.slots):
                wait = LOCKSTEP_WAIT_S if len(batch) < expected else ROUND_WAIT_S
                try:
                    request = self._queue.get(timeout=max(0.0, started + wait - time.monotonic()))
                except queue.Empty:
                    break
                if request is None:
                    self._queue.put(None)  # stop after this round
                    break
                batch.append(request)
            rows = set[int]()
            for group in _by_sampling(batch):
                try:
                    rows |= self._round(group)
                except Exception as exc:  # answer every request of the round, never hang
                    for request in group:
                        if not request.future.done():
                            request.future.set_exception(exc)
            expected, last_rows = len(rows | last_rows), rows

    def _round(self, requests: list[_Request]) -> set[int]:
        """Answer `requests` together; the slots they took."""
        taken: dict[int, _Request] = {}
        segments: dict[int, list[int]] = {}
        for request in requests:
            row = self._slot_for(request.prompt, taken)
            slot = self.slots[row]
            if slot.text and request.prompt.startswith(slot.text):
                ids = slot.refeed + self.chat.encode(request.prompt[len(slot.text) :])
            else:
                ids = self._start(row, self.chat.encode(request.prompt))
            requested = slot.tokens + len(ids) + request.sampling.max_new_tokens
            if requested > self.context_window:
                self.sequences.restart(row)
                slot.text, slot.tokens, slot.refeed = "", 0, []
                request.future.set_exception(ContextOverflow(self.context_window, requested))
                continue
            taken[row] = request
            segments[row] = ids
            slot.text, slot.tokens, slot.refeed = request.prompt, slot.tokens + len(ids), []
        if not taken:
            return set()
        grammars = {
            row: self.chat.json_grammars().for_schema(request.schema)
            for row, request in taken.items()
            if request.schema is not None
        }
        generators = {
            row: torch.Generator().manual_seed(request.seed % 2**64)
            for row, request in taken.items()
            if request.seed is not None
        }
        replies = self.sequences.extend_and_sample(
            segments, requests[0].sampling, grammars, fast_forward=True, generators=generators
        )
        for row, request in taken.items():
            reply = replies[row]
            slot = self.slots[row]
            prompt_tokens = slot.tokens
            cached = prompt_tokens - len(segments[row])
            written = self.chat.reply_text(reply.ids)
            self._keep_as_sent_back(row, written, reply.ids, reply.ended)
            slot.used = time.monotonic()
            request.future.set_result(
                Completion(
                    text=written,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=len(reply.ids),
                    finish_reason="stop" if reply.ended else "length",
                    cached_tokens=cached,
                )
            )
        if self.sequences.width() > (1 + COMPACT_SLACK) * self.sequences.longest():
            self.sequences.compact()
        return set(taken)

    def _start(self, row: int, ids: list[int]) -> list[int]:
        """Start a conversation in `row`, keeping the tokens it shares with the row's last
        one (the rules and the system prompt, the same for every episode of a
        scenario); the ids left to read."""
        held = self.sequences.tokens[row]
        shared, most = 0, min(len(held), len(ids) - 1)  # read at least one token
        while shared < most and held[shared] == ids[shared]:
            shared += 1
        if not shared:
            self.sequences.restart(row)
        elif shared < len(held):
            self.sequences.rewind(row, len(held) - shared)
        slot = self.slots[row]
        slot.text, slot.tokens, slot.refeed = "", shared, []
        return ids[shared:]

    def _keep_as_sent_back(self, row: int, written: str, ids: list[int], ended: bool) -> None:
        """Hold the reply as the client's next request will carry it: clients keep a
        reply without its surrounding whitespace (the `llm` agent does), so a reply that
        had some is taken back and read again as kept, and the next request extends the
        slot instead of starting it over (training reads replies the same way)."""
        slot = self.slots[row]
        kept = written.strip()
        stop = ids[-1:] if ended else []
        if kept == written:
            slot.text += self.chat.decode(ids)
            slot.tokens += len(ids)
            return
        self.sequences.rewind(row, len(ids))
        slot.refeed = self.chat.encode(kept) + stop  # read with the next segment
        slot.text += kept + self.chat.decode(stop)

    def _slot_for(self, prompt: str, taken: dict[int, _Request]) -> int:
        """The free slot whose text the prompt extends furthest, else the one used longest
        ago."""
        free = [row for row in range(len(self.slots)) if row not in taken]
        extended = [
            row for row in free if self.slots[row].text and prompt.startswith(self.slots[row].text)
        ]
        if extended:
            return max(extended, key=lambda row: len(self.slots[row].text))
        return min(free, key=lambda row: self.slots[row].used)


def _by_sampling(batch: list[_Request]) -> list[list[_Request]]:
    groups: dict[tuple[Any, ...], list[_Request]] = {}
    for request in batch:
        s = request.sampling
        groups.setdefault((s.max_new_tokens, s.temperature, s.top_p, s.top_k), []).append(request)
    return list(groups.values())


# ----- the HTTP front -----------------------------------------------------------------


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = ""
    messages: list[dict[str, Any]] = Field(min_length=1)
    max_tokens: int | None = Field(default=None, gt=0)
    max_completion_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
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
            done = engine.complete(messages, sampling, schema, tools, request.seed)
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
def serve(model_dir: str, *, slots: int = 8, seed: int = 0) -> Iterator[str]:
    """Serve the model in `model_dir` on loopback while the block runs; yields the base
    URL of its OpenAI-compatible API (`.../v1`)."""
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
    )
    try:
        with serve_in_thread(create_app(engine, Path(model_dir).name)) as url:
            yield f"{url}/v1"
    finally:
        engine.close()
