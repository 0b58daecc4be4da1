"""Several endpoints serving one model: least-loaded dispatch with fail-over.

`--base-url` given several times (or `--base-urls FILE`) fills `LLMConfig.base_urls`.
Every request of every LLM agent in this process goes through one `EndpointPool` per
URL list: it picks the up endpoint with the fewest requests in flight (ties: the one that
has answered fastest of late, then the one that has served fewest), and when a request
to it fails in a transient way (connection refused, timeout, 408/429/5xx) it marks that
endpoint down for a cool-off (2 s, doubling to 60 s while it keeps failing) and sends
the same request to the next one at once. When every endpoint has failed the request,
the fault goes to the agent's own retry loop (`faults.py`), whose next attempt starts
with the endpoint that comes back first. Fatal answers (401, 404, a context overflow)
are the model's answer, not the endpoint's, and are never failed over.

`{node_ip}` in a URL is replaced where the agent runs by `$TEXTENVS_NODE_IP` (a Ray
actor sets it to its node's address), else 127.0.0.1: `--base-url
http://{node_ip}:8000/v1` reaches the model server on each worker's own node.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from textenvs.agents.llm import faults
from textenvs.agents.llm.base_url import parse_base_url, request_options
from textenvs.agents.llm.config import LLMConfig, expand_node_ip
from textenvs.core.redact import redact_url

log = logging.getLogger("textenvs.agents.llm")

DOWN_FIRST_S = 2.0
DOWN_MAX_S = 60.0
#: weight of the newest request in an endpoint's moving average latency
LATENCY_WEIGHT = 0.2


@dataclass
class Endpoint:
    url: str
    in_flight: int = 0
    served: int = 0
    failures: int = 0  # in a row; reset by a success
    latency_s: float = 0.0  # moving average of successful requests (0: none yet)
    down_until: float = 0.0  # time.monotonic()


class EndpointPool:
    """The shared load and health of a list of endpoints (thread-safe)."""

    def __init__(self, urls: list[str] | tuple[str, ...]) -> None:
        if not urls:
            raise ValueError("an endpoint pool needs at least one URL")
        self.endpoints = [Endpoint(expand_node_ip(url).rstrip("/")) for url in urls]
        self._lock = threading.Lock()

    def pick(self, exclude: list[Endpoint] | None = None) -> Endpoint:
        """The endpoint for the next request (counted in flight until `done`): the least
        loaded of those up and not in `exclude`, else the one back soonest."""
        now = time.monotonic()
        with self._lock:
            candidates = [e for e in self.endpoints if e not in (exclude or ())]
            candidates = candidates or self.endpoints
            up = [e for e in candidates if e.down_until <= now]
            if up:
                chosen = min(up, key=lambda e: (e.in_flight, e.latency_s, e.served))
            else:
                chosen = min(candidates, key=lambda e: e.down_until)
            chosen.in_flight += 1
            return chosen

    def done(
        self, endpoint: Endpoint, *, ok: bool, down: bool = False, took_s: float = 0.0
    ) -> None:
        """A request to `endpoint` ended after `took_s`; `down`: it failed in a way that
        says the endpoint (not the request) is the problem."""
        with self._lock:
            endpoint.in_flight -= 1
            if ok:
                weight = LATENCY_WEIGHT if endpoint.served else 1.0
                endpoint.latency_s += weight * (took_s - endpoint.latency_s)
                endpoint.served += 1
                endpoint.failures = 0
                endpoint.down_until = 0.0
            elif down:
                endpoint.failures += 1
                cool_off = min(DOWN_MAX_S, DOWN_FIRST_S * 2 ** (endpoint.failures - 1))
                endpoint.down_until = time.monotonic() + cool_off


_pools: dict[tuple[str, ...], EndpointPool] = {}
_pools_lock = threading.Lock()


def pool_for(urls: list[str] | tuple[str, ...]) -> EndpointPool:
    """The process's pool for this URL list (keyed by the URLs, so every agent of a run
    shares the load counts)."""
    key = tuple(urls)
    with _pools_lock:
        if key not in _pools:
            _pools[key] = EndpointPool(key)
        return _pools[key]


async def complete(client: openai.AsyncOpenAI, request: dict[str, Any], cfg: LLMConfig) -> Any:
    """One chat completion: to the client's base URL, or through the pool of
    `cfg.base_urls` with fail-over. Raises what the last endpoint raised."""
    if not cfg.base_urls:
        # A plain POST: `chat.completions.create` first walks every message against the
        # SDK's TypedDicts (~3 ms of CPU a turn with history); ours are plain JSON.
        call = client.post("/chat/completions", body=request, cast_to=ChatCompletion)
        # not `wait_for`: on 3.11 it returns a reply that lands with a cancel, swallowing it
        async with asyncio.timeout(cfg.total_timeout_s):
            return await call
    pool = pool_for(cfg.base_urls)
    tried: list[Endpoint] = []
    while True:
        endpoint = pool.pick(tried)
        tried.append(endpoint)
        ok = down = False
        started = time.monotonic()
        try:
            target = parse_base_url(endpoint.url)  # user info and query: see base_url.py
            key = client.api_key if client.api_key != "EMPTY" else None
            call = client.post(f"{target.url}/chat/completions", body=request,
                               cast_to=ChatCompletion,
                               options=request_options(endpoint.url, key))  # fmt: skip
            async with asyncio.timeout(cfg.total_timeout_s):  # see above: not wait_for
                result = await call
            ok = True
            return result
        except Exception as exc:
            down = faults.classify(exc).kind == "transient"
            if not down or len(tried) >= len(pool.endpoints):
                raise
            log.warning("endpoint %s failed (%s); trying another", redact_url(endpoint.url),
                        type(exc).__name__)  # fmt: skip
        finally:  # a cancelled request is counted out too
            pool.done(endpoint, ok=ok, down=down, took_s=time.monotonic() - started)
