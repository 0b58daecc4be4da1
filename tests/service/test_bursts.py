"""Bursts are shaped, not refused (issue 42): a trainer's 256 OpenEnv clients connecting,
resetting and stepping at once are all served by a default server, with or without
tokens; work over a rate waits its turn, up to a patience, then is refused with
Retry-After; a refused WebSocket message costs neither the session nor the connection."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from websockets.sync.client import connect

from benchmarks.service_burst import burst, with_credentials
from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread
from textenvs.service.tenancy import ClientLimits
from textenvs.service.transport.connections import uvicorn_settings

pytest.importorskip("openenv.core")

ENV = "treasure-hunt"
TOKENS = {"trainer": "trainer-token-0123456789", "other": "other-token-0123456789ab"}
CLIENTS = 256


@pytest.mark.slow
@pytest.mark.parametrize("tokens", [None, TOKENS], ids=["no-tokens", "tenant"])
def test_256_openenv_clients_at_once_are_all_served(tokens: dict[str, str] | None) -> None:
    """Default limits and connection guard, as `textenvs serve` has them; one step each
    keeps the test short (the benchmark takes three)."""
    with serve_in_thread(create_app(tokens=tokens), **uvicorn_settings()) as url:
        target = with_credentials(url, "trainer", TOKENS["trainer"]) if tokens else url
        result = asyncio.run(burst(target, CLIENTS, steps=1))
        assert result.errors == [], f"{len(result.errors)} failed, e.g. {result.errors[:3]}"
        headers = {"Authorization": f"Bearer {TOKENS['trainer']}"} if tokens else {}
        assert httpx.get(f"{url}/v1/health", headers=headers).json()["sessions"] == 0


@pytest.mark.slow
def test_steps_over_the_rate_wait_their_turn_then_are_refused() -> None:
    """10 steps a second: 30 at once take about two seconds and are all served; with a
    patience of half a second, what would wait longer is refused with Retry-After."""
    for patience, served_all in ((10.0, True), (0.5, False)):
        limits = ClientLimits(steps_per_second=10, patience=patience)
        with serve_in_thread(create_app(limits=limits)) as url, httpx.Client(base_url=url) as http:
            sid = http.post("/v1/sessions", json={"env": ENV, "seed": 1}).json()["session_id"]
            started = time.monotonic()
            answers = asyncio.run(_steps_at_once(url, sid, 30))
            took = time.monotonic() - started
            statuses = sorted(a.status_code for a in answers)
            steps_used = http.get(f"/v1/sessions/{sid}").json()["steps_used"]
        if served_all:
            assert statuses == [200] * 30
            assert took >= 1.5, f"30 steps at 10 a second took {took:.2f} s"
        else:
            served = statuses.count(200)
            assert 10 <= served <= 17 and statuses.count(429) == 30 - served, statuses
            refused = [a for a in answers if a.status_code == 429]
            assert all(int(a.headers["retry-after"]) >= 1 for a in refused)
        assert steps_used == statuses.count(200)  # a refused step changed nothing


async def _steps_at_once(url: str, sid: str, count: int) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        steps = (
            http.post(f"/v1/sessions/{sid}/step", json={"command": "wait"}) for _ in range(count)
        )
        return list(await asyncio.gather(*steps))


def test_a_refused_websocket_message_keeps_its_session_and_connection() -> None:
    limits = ClientLimits(steps_per_second=2, patience=0)
    with serve_in_thread(create_app(limits=limits, refusal_pause=0.1)) as url:
        ws = url.replace("http://", "ws://") + f"/openenv/{ENV}/ws"
        with connect(ws) as sock:
            sock.send(json.dumps({"type": "reset", "data": {"seed": 3}}))
            assert json.loads(sock.recv(timeout=10))["type"] == "observation"
            codes = []
            for _ in range(4):  # past the 2 a second
                sock.send(json.dumps({"type": "step", "data": {"command": "wait"}}))
                answer = json.loads(sock.recv(timeout=10))
                codes.append(answer["data"].get("code", answer["type"]))
            assert "rate_limited" in codes and codes[0] == "observation"
            time.sleep(1.1)  # the allowance refilled: the same session goes on
            sock.send(json.dumps({"type": "state"}))
            state = json.loads(sock.recv(timeout=10))
            assert state["type"] == "state"
            assert (state["data"]["seed"], state["data"]["step_count"]) == (
                3,
                codes.count("observation"),
            )
