"""The service started by `textenvs serve` in its own process: many sessions stepping at
once give exactly the local envs' episodes, remote play through the client equals local
play, and thousands of create/delete cycles (10,000 with `--hypothesis-profile thorough`)
leave memory flat."""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

import textenvs
from tests.conftest import transcript_digest
from textenvs.agents import make_agent
from textenvs.episodes.loop import run_episode
from textenvs.service.client import remote_env_factory

ENV_NAMES = textenvs.names()
MAX_STEPS_COMPARED = 10  # per session; keeps the test fast for long-budget scenarios


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    """`textenvs serve --port 0` in a subprocess; yields (base URL, pid)."""
    # 11,000 create/delete cycles below: no creation rate limit
    limits = ["--max-sessions", "500", "--creates-per-minute", "0"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "textenvs.cli", "serve", "--port", "0", *limits],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    url = None
    for line in proc.stderr:  # uvicorn logs the address it bound
        match = re.search(r"running on (http://127\.0\.0\.1:\d+)", line, re.IGNORECASE)
        if match:
            url = match.group(1)
            break
    assert url is not None, "the server did not start"
    # Keep draining its log so a full pipe never blocks the server.
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    try:
        yield url, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def local_episode(env_name: str, seed: int) -> list[tuple[str, Any]]:
    """(command, jsonable step result) per step of a random-command episode, played locally."""
    env = textenvs.make(env_name)
    _, info = env.reset(seed=seed)
    rng = np.random.default_rng([seed, 7])
    steps = []
    for _ in range(MAX_STEPS_COMPARED):
        command = env.random_command(info, rng)
        text, reward, terminated, truncated, info = env.step(command)
        result = {
            "observation": text,
            "reward": reward,
            "terminated": terminated,
            "truncated": truncated,
            "info": info,
        }
        steps.append((command, json.loads(json.dumps(result))))
        if terminated or truncated:
            break
    return steps


async def remote_episode(
    http: httpx.AsyncClient, env_name: str, seed: int, commands: list[str]
) -> list[Any]:
    created = (await http.post("/v1/sessions", json={"env": env_name, "seed": seed})).json()
    sid = created["session_id"]
    results = []
    for command in commands:
        await asyncio.sleep(0)  # interleave sessions
        response = await http.post(f"/v1/sessions/{sid}/step", json={"command": command})
        results.append(response.json())
    assert (await http.delete(f"/v1/sessions/{sid}")).status_code == 204
    return results


@pytest.mark.slow
def test_100_concurrent_sessions_match_local_envs(server: tuple[str, int]) -> None:
    jobs = [(ENV_NAMES[i % len(ENV_NAMES)], 1000 + i) for i in range(100)]
    expected = {job: local_episode(*job) for job in jobs}

    async def main() -> list[list[Any]]:
        limits = httpx.Limits(max_connections=100)
        async with httpx.AsyncClient(base_url=server[0], limits=limits, timeout=60) as http:
            return await asyncio.gather(
                *(
                    remote_episode(http, name, seed, [c for c, _ in expected[(name, seed)]])
                    for name, seed in jobs
                )
            )

    remote = asyncio.run(main())
    for job, got in zip(jobs, remote, strict=True):
        assert got == [result for _, result in expected[job]], job


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_remote_env_plays_like_the_local_env(server: tuple[str, int], env_name: str) -> None:
    make = remote_env_factory(server[0])
    for seed in (0, 1):
        local = asyncio.run(run_episode(textenvs.make(env_name), make_agent("random"), seed))
        with make(env_name) as env:
            remote = asyncio.run(run_episode(env, make_agent("random"), seed))
        assert transcript_digest(remote) == transcript_digest(local)
        assert (remote.outcome, remote.steps) == (local.outcome, local.steps)


def rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]


def cycles(url: str, env_name: str, count: int, workers: int = 4) -> None:
    """`count` create/step/delete cycles from `workers` threads. Plain `http.client`
    keeps the client side cheap, so the server does most of the work."""
    host, port = url.removeprefix("http://").split(":")
    headers = {"Content-Type": "application/json"}

    def worker(n: int) -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        for i in range(n):
            conn.request("POST", "/v1/sessions", json.dumps({"env": env_name, "seed": i}), headers)
            response = conn.getresponse()
            assert response.status == 201
            sid = json.loads(response.read())["session_id"]
            if i % 10 == 0:  # some sessions also step, so their episodes hold state
                conn.request("POST", f"/v1/sessions/{sid}/step", '{"command": "n"}', headers)
                assert conn.getresponse().read()
            conn.request("DELETE", f"/v1/sessions/{sid}")
            response = conn.getresponse()
            response.read()
            assert response.status == 204
        conn.close()

    threads = [threading.Thread(target=worker, args=(count // workers,)) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.slow
def test_create_delete_cycles_keep_memory_flat(server: tuple[str, int], thorough: bool) -> None:
    url, pid = server
    cycles(url, ENV_NAMES[0], 1_000)  # warm up caches and allocator pools
    before = rss_kib(pid)
    cycles(url, ENV_NAMES[0], 10_000 if thorough else 1_500)
    after = rss_kib(pid)
    assert httpx.get(f"{url}/v1/health").json()["sessions"] == 0
    # A leaked env per cycle (~36 KB) would cost 50 MB or more even over 1,500 cycles;
    # allocator noise is far less.
    assert after - before < 8 * 1024, (before, after)
