"""Credentials never reach a file or a console line: the redaction helpers, then real
`textenvs eval` runs whose every output file is scanned for every secret."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply, text
from textenvs.core.redact import (
    Scrubber,
    is_secret_name,
    redact_argv,
    redact_data,
    redact_url,
    secrets_in_data,
    secrets_in_url,
)
from textenvs.evals import store
from textenvs.service import create_app
from textenvs.service.background import serve_in_thread

TEXTENVS = [sys.executable, "-m", "textenvs.cli"]
API_KEY = "sk-scan-APIKEY-31337"
LLM_USER, LLM_PASSWORD = "llmuser7", "LLMPASSWORD-4242"
QUERY_KEY = "QUERYKEY-5150"
BODY_KEY = "BODYKEY-8675309"
ENV_USER, ENV_PASSWORD = "envuser9", "ENVPASSWORD-1999"
SERVICE_TOKEN = "SERVICETOKEN-2001"
SECRETS = [API_KEY, LLM_USER, LLM_PASSWORD, QUERY_KEY, BODY_KEY, ENV_USER, ENV_PASSWORD]
SECRETS.append(SERVICE_TOKEN)


def test_secret_names() -> None:
    for name in ("api_key", "X-Api-Key", "apiKey", "access_token", "password", "sig", "auth"):
        assert is_secret_name(name), name
    for name in ("max_tokens", "top_k", "temperature", "keys", "model", "api-version"):
        assert not is_secret_name(name), name


def test_urls_data_and_command_lines_are_redacted() -> None:
    url = f"http://{LLM_USER}:{LLM_PASSWORD}@[::1]:8000/v1?api-key={QUERY_KEY}&api-version=2"
    assert redact_url(url) == "http://***@[::1]:8000/v1?api-key=***&api-version=2"
    assert redact_url("https://Host.example/v1") == "https://Host.example/v1"  # untouched
    assert secrets_in_url(url) == [LLM_USER, LLM_PASSWORD, QUERY_KEY]
    body = {"api_key": BODY_KEY, "top_k": 3, "max_tokens": 9, "stream": False,
            "extra_headers": {"X-Org": "acme-org"}, "callback": url}  # fmt: skip
    assert redact_data(body) == {
        "api_key": "***", "top_k": 3, "max_tokens": 9, "stream": False,
        "extra_headers": {"X-Org": "***"}, "callback": redact_url(url),
    }  # fmt: skip
    assert set(secrets_in_data(body)) == {BODY_KEY, "acme-org", LLM_USER, LLM_PASSWORD, QUERY_KEY}
    argv = ["eval", "--base-url", url, f"--env-url={url}", "--extra-body", '{"token": "t0k3n"}']
    assert redact_argv(argv) == [
        "eval", "--base-url", redact_url(url), f"--env-url={redact_url(url)}",
        "--extra-body", '{"token": "***"}',
    ]  # fmt: skip
    scrub = Scrubber([LLM_PASSWORD, "user", None])  # too short to search for: left alone
    assert scrub({"role": "user", "error": f"401 for {LLM_PASSWORD}"}) == {
        "role": "user",
        "error": "401 for ***",
    }


def _echo(request: RecordedRequest) -> Reply:
    """A careless server that repeats the credentials it was sent."""
    return text(
        f"I got {request.body.get('api_key')} with {request.headers.get('authorization')} "
        f"at {request.path}. Action: wait"
    )


def _assert_nothing_leaked(out: Path, *consoles: str) -> None:
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == store.CONFIG for p in files)
    for path in files:
        content = path.read_text(encoding="utf-8", errors="replace")
        for secret in SECRETS:
            assert secret not in content, f"{secret} leaked into {path.relative_to(out)}"
    for console in consoles:
        for secret in SECRETS:
            assert secret not in console, f"{secret} leaked to the console"


def test_no_secret_in_any_file_or_console_line(tmp_path: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": API_KEY, "TEXTENVS_TOKEN": SERVICE_TOKEN}
    with (
        OpenAIServer(default=_echo) as llm,
        serve_in_thread(create_app(idle_timeout=0)) as service,  # TEXTENVS_TOKEN is sent
    ):
        base_url = llm.base_url.replace("http://", f"http://{LLM_USER}:{LLM_PASSWORD}@")
        env_url = service.replace("http://", f"http://{ENV_USER}:{ENV_PASSWORD}@")
        cmd = [*TEXTENVS, "eval", "--env", "treasure-hunt", "--seeds", "0-1", "--agent", "llm"]
        cmd += ["--model", "test-model", "--base-url", base_url, "--env-url", env_url]
        cmd += ["--extra-body", f'{{"api_key": "{BODY_KEY}", "top_k": 3}}']
        done = subprocess.run(
            [*cmd, "--out", str(tmp_path / "ok")], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        assert all(r.body["api_key"] == BODY_KEY for r in llm.requests)  # it was used
        report = subprocess.run([*TEXTENVS, "report", str(tmp_path / "ok")], capture_output=True,
                                text=True, env=env)  # fmt: skip
        assert report.returncode == 0, report.stderr
        _assert_nothing_leaked(tmp_path / "ok", done.stdout, done.stderr, report.stdout)

        # A key in the query string (the client then asks for a path the server echoes):
        # the preflight's line, then a run without preflight that stops on the errors.
        query_url = f"{llm.base_url}?api-key={QUERY_KEY}"
        cmd = [*TEXTENVS, "eval", "--env", "treasure-hunt", "--seeds", "0-9", "--agent", "llm"]
        cmd += ["--model", "m", "--base-url", query_url, "--out", str(tmp_path / "query")]
        refused = subprocess.run(cmd, capture_output=True, text=True, env=env)
        assert refused.returncode == 2 and "preflight" in refused.stderr
        stopped = subprocess.run([*cmd, "--no-preflight"], capture_output=True, text=True, env=env)
        assert stopped.returncode == 4, stopped.stderr
    assert "HTTP 404" in (tmp_path / "query" / store.EPISODES).read_text()  # the echo, masked
    _assert_nothing_leaked(tmp_path / "query", refused.stderr, stopped.stdout, stopped.stderr)
