"""How the `llm` agent reaches its model: the client, the retry loop, and the embedded
model's server.

`Transport.complete` sends one chat-completion request with the fault policy of
`faults.py` (transient faults retried with backoff, a context overflow raised as
`faults.ContextOverflow` for the agent to cut its history, anything else fatal). In json
mode a 4xx/5xx that names `response_format` switches the request to the other form at
once (`json_mode.forms`). With `--model local` the transport leases a server of its own
from `local.pool`, reads what it evaluated and reused from the server's log, and turns a
crash into an error that says how the server ended and what it last logged.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import random
import ssl
from typing import Any

import openai

from textenvs.agents.llm import endpoints, faults, json_mode
from textenvs.agents.llm.base_url import client_options
from textenvs.agents.llm.config import LLMConfig
from textenvs.episodes.protocol import AGENT_ERROR, CONTEXT_OVERFLOW

log = logging.getLogger("textenvs.agents.llm")


class Transport:
    """One agent's connection to its endpoint (one event loop at a time)."""

    def __init__(self, config: LLMConfig) -> None:
        self.cfg = config
        self.rng = random.Random(0)  # backoff jitter; the agent reseeds it per episode
        self.base_url = ""  # the endpoint in use (json mode remembers its form per URL)
        self.local: Any = None  # the embedded model's server leased to this agent
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._secret = ""  # the key in use, kept only to redact it from anything we emit

    async def complete(self, request: dict[str, Any], record: dict[str, Any]) -> Any:
        """The completion for `request`, after the retries the fault policy allows."""
        client = await self._client_for_loop()
        current = request.get("response_format")
        if current and current["type"] != self.json_form():  # the form this endpoint takes
            request["response_format"] = json_mode.response_format(
                json_mode.schema_of(current), self.json_form()
            )
        cfg = self.cfg
        for attempt in range(1, cfg.max_attempts + 1):
            record["attempts"] += 1
            try:
                return await endpoints.complete(client, request, cfg)  # one or several URLs
            except Exception as exc:
                fault = faults.classify(exc)
            text = self.redact(fault.message)
            if fault.kind == CONTEXT_OVERFLOW:
                raise faults.ContextOverflow(fault)
            if self.local is not None and (crash := self.local.crash_report()):
                raise faults.AgentFault(AGENT_ERROR, crash)
            refused = self._json_form_refused(fault, request)
            if refused == "switched":
                record["request_errors"].append({"attempt": attempt, "error": text, "wait_s": 0})
                continue
            if fault.kind == "fatal" or attempt == cfg.max_attempts or refused == "both":
                raise faults.AgentFault(
                    AGENT_ERROR, f"{text} (after {attempt} attempt{'s' * (attempt > 1)})"
                )
            wait = faults.backoff_s(
                attempt,
                base=cfg.backoff_base_s,
                cap=cfg.backoff_max_s,
                rng=self.rng,
                retry_after_s=fault.retry_after_s,
                retry_after_cap=cfg.retry_after_max_s,
            )
            record["request_errors"].append({"attempt": attempt, "error": text, "wait_s": wait})
            log.warning("llm request attempt %d failed: %s; retrying in %.2fs", attempt, text, wait)
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def json_form(self) -> json_mode.Form:
        """The `response_format` form for this endpoint."""
        if self.cfg.response_format != "auto":
            return self.cfg.response_format
        if self.cfg.is_local:  # llama-cpp-python's server, which takes only this form
            return "json_object"
        return json_mode.forms.get(self.base_url)

    def _json_form_refused(self, fault: faults.Fault, request: dict[str, Any]) -> str | None:
        """json mode: a 4xx/5xx naming `response_format` is about the form, not a passing
        fault. "switched": the request now has the other form (remembered for this
        endpoint); "both": no form is left to try; None: not such an error."""
        current = request.get("response_format")
        if not current or (fault.status or 0) < 400:
            return None
        if not json_mode.names_response_format(fault.message):
            return None
        form = (
            None
            if self.cfg.response_format != "auto"
            else json_mode.forms.other(self.base_url, current["type"])
        )
        if form is None or form == current["type"]:
            return "both"
        log.info("the endpoint refused response_format %s; using %s", current["type"], form)
        request["response_format"] = json_mode.response_format(json_mode.schema_of(current), form)
        return "switched"

    async def _client_for_loop(self) -> openai.AsyncOpenAI:
        """A client bound to the running event loop (httpx pools cannot cross loops)."""
        loop = asyncio.get_running_loop()
        if self._client is not None and self._client_loop is loop:
            return self._client
        base_url = self.cfg.resolved_base_url()
        if self.cfg.is_local:
            base_url = await self._lease_local_server()
        self.base_url = base_url or ""
        try:
            key = self.cfg.api_key(required=base_url is None)
        except ValueError as exc:
            raise faults.AgentFault(AGENT_ERROR, str(exc)) from None
        self._secret = key if key != "EMPTY" else ""
        self._client = build_client(self.cfg, key, base_url)
        self._client_loop = loop
        return self._client

    async def _lease_local_server(self) -> str:
        """The embedded model: a server of its own for this agent, so episodes in flight
        never evict each other's prompt cache."""
        from textenvs.agents.llm import local

        if self.local is None:
            n_ctx = local.context_size(self.cfg.resolved_prompt_budget, self.cfg.reply_room)
            try:
                self.local = await asyncio.to_thread(
                    local.pool.lease, n_ctx, self.cfg.local_threads
                )
            except local.LocalModelError as exc:
                raise faults.AgentFault(AGENT_ERROR, str(exc)) from None
        return str(self.local.base_url)

    def local_counts(self) -> dict[str, int]:
        """The embedded model's server: prompt tokens evaluated and reused since the last
        call, from its log ({} for other servers)."""
        return self.local.take_counts() if self.local is not None else {}

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self.local is not None:  # back to the pool for the next episode's agent
            from textenvs.agents.llm import local

            local.pool.release(self.local)
            self.local = None

    def redact(self, value: Any) -> Any:
        """The same value with the API key masked in every string (belt and braces: a
        server may echo headers in an error body)."""
        if not self._secret or len(self._secret) < 4:
            return value
        if isinstance(value, str):
            return value.replace(self._secret, "[redacted]")
        blob = json.dumps(value, default=str)
        if self._secret not in blob:
            return value
        return json.loads(blob.replace(json.dumps(self._secret)[1:-1], "[redacted]"))


def build_client(config: LLMConfig, key: str, base_url: str | None) -> openai.AsyncOpenAI:
    """The OpenAI client for one endpoint."""
    return openai.AsyncOpenAI(
        **client_options(base_url, key),  # user info, query
        max_retries=0,  # the agent's own loop counts every attempt
        timeout=openai.Timeout(config.read_timeout_s, connect=config.connect_timeout_s),
        # one agent per episode: share the TLS context (~25 ms of CPU to build each)
        http_client=openai.DefaultAsyncHttpxClient(verify=_ssl_context()),
    )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One client TLS context per process, with the CA bundle the SDK's HTTP client uses
    by default (certifi's): building one costs ~25 ms of CPU, and there is an agent per
    episode."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())
