"""A real OpenAI-compatible chat-completions server on 127.0.0.1, scripted per request.

Agent, eval and benchmark tests use it instead of the network. It is a real HTTP/1.1
server (threaded, ephemeral port) speaking `POST /v1/chat/completions` and
`GET /v1/models`. Each request takes the next behaviour from a queue; when the queue is
empty it uses `default`, or answers 400 `script_exhausted` (never retried) so a test that
asks more than it scripted fails loudly. Every request is recorded.

    from benchmarks.support.openai_server import OpenAIServer, text, rate_limited, stall

    with OpenAIServer(default=text("wait")) as server:
        server.script(rate_limited(retry_after=0.01), text("Action: north"))
        agent = LLMAgent(model="test", base_url=server.base_url)
        ...
        assert len(server.requests) == 2
        assert server.requests[0].messages[-1]["role"] == "user"

Behaviours: `text(...)` (with optional `reasoning_content` / `reasoning` fields or a
`<think>` block via `think(...)`), `tool_call(...)`, `empty()`, `refusal()`,
`http_error(status)`, `server_error()`, `rate_limited(retry_after)`, `context_overflow()`,
`stall(seconds)` (no answer for that long, then the connection closes), `drop()` (the
connection closes with no response). Any behaviour can add `latency_s`. A behaviour may
also be a callable `(RecordedRequest) -> behaviour` for replies that depend on the prompt.

Usage figures are word counts (prompt: all message text; completion: visible text and
tool arguments; reasoning: reasoning text), so they are deterministic.

Server traits, as real servers have them (constructor options):

- `response_formats`: the `response_format` types it takes (None: any). A request with
  another type is answered as llama-cpp-python answers `json_schema`: a 500 whose message
  names `response_format`.
- `context_window`: a request whose prompt words plus its `max_tokens` exceed it gets the
  400 that vLLM and llama-cpp-python send ("This model's maximum context length is N
  tokens. However, you requested M tokens (P in the messages, R in the completion)...").
- `model_meta`: fields merged into the model's `/v1/models` entry (vLLM's
  `{"max_model_len": 4096}`, llama.cpp's `{"meta": {...}}`); `props`: the JSON that
  `GET /props` answers (llama.cpp's), 404 when None.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # with its query string, as received
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]
    received_at: float

    @property
    def query(self) -> dict[str, str]:
        """The query parameters, decoded."""
        return dict(parse_qsl(urlsplit(self.path).query, keep_blank_values=True))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, as the model wrote it (may be invalid on purpose)
    id: str = ""


@dataclass(frozen=True)
class Reply:
    content: str | None = ""
    reasoning_content: str | None = None  # DeepSeek / vLLM style field
    reasoning: str | None = None  # OpenRouter / newer vLLM / Ollama style field
    tool_calls: tuple[ToolCall, ...] = ()
    refusal: str | None = None
    finish_reason: str = "stop"
    usage: dict[str, Any] | None = None  # overrides the word-count usage
    latency_s: float = 0.0


@dataclass(frozen=True)
class HTTPError:
    status: int
    message: str = "error"
    code: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    latency_s: float = 0.0


@dataclass(frozen=True)
class Stall:
    seconds: float


@dataclass(frozen=True)
class Drop:
    latency_s: float = 0.0


Behaviour = Reply | HTTPError | Stall | Drop
Scripted = Behaviour | Callable[[RecordedRequest], Behaviour]


# ----- behaviour constructors ----------------------------------------------------------


def text(content: str, *, latency_s: float = 0.0, **fields: Any) -> Reply:
    """A plain reply; `fields` are other `Reply` fields (reasoning_content, reasoning,
    finish_reason, usage)."""
    return Reply(content=content, latency_s=latency_s, **fields)


def think(thought: str, answer: str, **fields: Any) -> Reply:
    return Reply(content=f"<think>{thought}</think>\n{answer}", **fields)


def tool_call(
    arguments: dict[str, Any] | str, *, name: str = "act", content: str | None = None, **fields: Any
) -> Reply:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Reply(
        content=content, tool_calls=(ToolCall(name, args),), finish_reason="tool_calls", **fields
    )


def empty(finish_reason: str = "stop", **fields: Any) -> Reply:
    return Reply(content="", finish_reason=finish_reason, **fields)


def refusal(message: str = "I can't help with that.") -> Reply:
    return Reply(content=None, refusal=message)


def http_error(
    status: int, message: str = "error", code: str | None = None, **headers: str
) -> HTTPError:
    return HTTPError(
        status, message, code, tuple((k.replace("_", "-"), v) for k, v in headers.items())
    )


def server_error(status: int = 500) -> HTTPError:
    return HTTPError(status, "The server had an error while processing your request.")


def rate_limited(retry_after: float | str | None = None, status: int = 429) -> HTTPError:
    headers = () if retry_after is None else (("Retry-After", _fmt(retry_after)),)
    return HTTPError(
        status, "Rate limit reached. Please try again later.", "rate_limit_exceeded", headers
    )


def context_overflow(limit: int = 4096) -> HTTPError:
    return HTTPError(
        400,
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {limit + 1} tokens. Please reduce the length of the messages.",
        "context_length_exceeded",
    )


def stall(seconds: float) -> Stall:
    return Stall(seconds)


def drop() -> Drop:
    return Drop()


def _fmt(value: float | str) -> str:
    return value if isinstance(value, str) else f"{value:g}"


def _words(value: Any) -> int:
    return len(value.split()) if isinstance(value, str) else 0


# ----- the server ----------------------------------------------------------------------


class OpenAIServer:
    """Start with `with OpenAIServer() as server:` (or `start()` / `stop()`)."""

    def __init__(
        self,
        *,
        default: Scripted | None = None,
        model: str = "test-model",
        response_formats: tuple[str, ...] | None = None,
        context_window: int | None = None,
        model_meta: dict[str, Any] | None = None,
        props: dict[str, Any] | None = None,
    ) -> None:
        self.default = default
        self.model = model
        self.response_formats = response_formats
        self.context_window = context_window
        self.model_meta = model_meta or {}
        self.props = props
        self._queue: deque[Scripted] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._counter = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----- control ----------------------------------------------------------------------

    def start(self) -> OpenAIServer:
        handler = type("Handler", (_Handler,), {"owner": self})
        self._httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False  # idle keep-alive threads must not block stop()
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()  # wakes stalled handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *behaviours: Scripted) -> None:
        """Queue behaviours, one per coming request."""
        with self._lock:
            self._queue.extend(behaviours)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Chat-completion requests received so far (GET /models is not recorded)."""
        with self._lock:
            return list(self._requests)

    def clear(self) -> None:
        with self._lock:
            self._queue.clear()
            self._requests.clear()

    # ----- used by the handler ----------------------------------------------------------

    def _refusal(self, request: RecordedRequest) -> HTTPError | None:
        """What a server with these traits answers before generating anything."""
        kind = (request.body.get("response_format") or {}).get("type")
        if kind and self.response_formats is not None and kind not in self.response_formats:
            return HTTPError(
                500,
                "1 validation error: {'type': 'literal_error', 'loc': ('body', "
                f"'response_format', 'type'), 'msg': \"Input should be "
                f"{' or '.join(map(repr, self.response_formats))}\", 'input': '{kind}'}}",
            )
        if self.context_window is not None:
            prompt = sum(_words(m.get("content")) for m in request.messages)
            reply = int(request.body.get("max_tokens") or 0)
            if prompt + reply > self.context_window:
                return HTTPError(
                    400,
                    f"This model's maximum context length is {self.context_window} tokens. "
                    f"However, you requested {prompt + reply} tokens ({prompt} in the "
                    f"messages, {reply} in the completion). Please reduce the length of the "
                    "messages or completion.",
                    "context_length_exceeded",
                )
        return None

    def _take(self, request: RecordedRequest) -> Behaviour:
        with self._lock:
            self._requests.append(request)
            self._counter += 1
            refused = self._refusal(request)
            if refused is not None:
                return refused
            scripted = self._queue.popleft() if self._queue else self.default
        if scripted is None:
            return HTTPError(400, "script exhausted: no behaviour queued", "script_exhausted")
        return scripted(request) if callable(scripted) else scripted

    def _completion(self, request: RecordedRequest, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.reasoning_content is not None:
            message["reasoning_content"] = reply.reasoning_content
        if reply.reasoning is not None:
            message["reasoning"] = reply.reasoning
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or f"call_{self._counter}_{i}",
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for i, call in enumerate(reply.tool_calls)
            ]
        prompt = sum(_words(m.get("content")) for m in request.messages)
        thought = reply.content.split("</think>")[0] if "<think>" in (reply.content or "") else ""
        reasoning = _words(reply.reasoning_content) + _words(reply.reasoning) + _words(thought)
        completion = _words(reply.content) + sum(_words(c.arguments) for c in reply.tool_calls)
        usage = reply.usage or {
            "prompt_tokens": prompt,
            "completion_tokens": completion + reasoning,
            "total_tokens": prompt + completion + reasoning,
            "completion_tokens_details": {"reasoning_tokens": reasoning},
        }
        return {
            "id": f"chatcmpl-{self._counter}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.body.get("model", self.model),
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
            "usage": usage,
        }


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # dozens of clients connect at once in evals and benchmarks


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIServer
    protocol_version = "HTTP/1.1"
    timeout = 10  # idle keep-alive connections end on their own
    # Headers and body go out in separate writes: without this, each reply waits ~40 ms
    # for the client's delayed ACK (Nagle).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        if path.endswith("/models"):
            entry = {"id": self.owner.model, "object": "model", **self.owner.model_meta}
            self._send(200, {"object": "list", "data": [entry]})
        elif path == "/props" and self.owner.props is not None:
            self._send(200, self.owner.props)
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "code": None}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not urlsplit(self.path).path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "code": None}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "body is not JSON", "code": None}})
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = RecordedRequest("POST", self.path, headers, body, time.monotonic())
        behaviour = self.owner._take(request)
        if isinstance(behaviour, Stall):
            self.owner._closing.wait(behaviour.seconds)
            self._hang_up()
            return
        self.owner._closing.wait(getattr(behaviour, "latency_s", 0.0))
        if isinstance(behaviour, Drop):
            self._hang_up()
        elif isinstance(behaviour, HTTPError):
            error = {
                "message": behaviour.message,
                "type": "error",
                "param": None,
                "code": behaviour.code,
            }
            self._send(behaviour.status, {"error": error}, behaviour.headers)
        elif body.get("stream"):
            self._send(400, {"error": {"message": "streaming is not scripted", "code": None}})
        else:
            self._send(200, self.owner._completion(request, behaviour))

    def _send(
        self, status: int, data: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()
    ) -> None:
        payload = json.dumps(data).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:  # the client gave up (e.g. its timeout fired)
            self.close_connection = True

    def _hang_up(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
