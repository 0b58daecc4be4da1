"""Credentials never reach a file or a console line: the redaction helpers, then real
`textenvs eval` runs whose every output file is scanned for every secret."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import quote, quote_plus, urlsplit

import pytest

from benchmarks.support.openai_server import OpenAIServer, RecordedRequest, Reply, http_error, text
from textenvs.cli import main
from textenvs.core.redact import (
    Scrubber,
    is_secret_name,
    redact_argv,
    redact_data,
    redact_url,
    secrets_in_data,
    secrets_in_url,
)
from textenvs.evals import run_folder
from textenvs.service import create_app
from textenvs.service.background import serve_in_thread

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
    assert {LLM_USER, LLM_PASSWORD, QUERY_KEY} <= set(secrets_in_url(url))
    body = {"api_key": BODY_KEY, "top_k": 3, "max_tokens": 9, "stream": False,
            "extra_headers": {"X-Org": "acme-org"}, "callback": url}  # fmt: skip
    assert redact_data(body) == {
        "api_key": "***", "top_k": 3, "max_tokens": 9, "stream": False,
        "extra_headers": {"X-Org": "***"}, "callback": redact_url(url),
    }  # fmt: skip
    assert {BODY_KEY, "acme-org", LLM_USER, LLM_PASSWORD, QUERY_KEY} <= set(secrets_in_data(body))
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
    assert any(p.name == run_folder.CONFIG for p in files)
    for path in files:
        content = path.read_text(encoding="utf-8", errors="replace")
        for secret in SECRETS:
            assert secret not in content, f"{secret} leaked into {path.relative_to(out)}"
    for console in consoles:
        for secret in SECRETS:
            assert secret not in console, f"{secret} leaked to the console"


def _textenvs(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """`textenvs ARGS` in this process: (exit code, everything printed)."""
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_no_secret_in_any_file_or_console_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("TEXTENVS_TOKEN", SERVICE_TOKEN)
    with (
        OpenAIServer(default=_echo) as llm,
        serve_in_thread(create_app(idle_timeout=0)) as service,  # TEXTENVS_TOKEN is sent
    ):
        base_url = llm.base_url.replace("http://", f"http://{LLM_USER}:{LLM_PASSWORD}@")
        env_url = service.replace("http://", f"http://{ENV_USER}:{ENV_PASSWORD}@")
        cmd = ["eval", "--env", "treasure-hunt", "--seeds", "0", "--agent", "llm"]
        cmd += ["--model", "test-model", "--base-url", base_url, "--env-url", env_url]
        cmd += ["--extra-body", f'{{"api_key": "{BODY_KEY}", "top_k": 3}}']
        code, console = _textenvs(capsys, *cmd, "--out", str(tmp_path / "ok"))
        assert code == 0, console
        assert all(r.body["api_key"] == BODY_KEY for r in llm.requests)  # it was used
        report = tmp_path / "ok-report"
        code, reported = _textenvs(capsys, "report", str(tmp_path / "ok"), "--out", str(report))
        assert code == 0, reported
        assert (report / "report.html").is_file() and (report / "figures").is_dir()
        _assert_nothing_leaked(tmp_path, console, reported)  # the run and its report


# URL-special characters: the URL carries them percent-encoded, the server decodes them.
SPECIAL_KEY = "QK+7/9=x&y!1"
HEADER_VALUE = "ORG-HEADER-6502"
BASIC = base64.b64encode(f"{LLM_USER}:{LLM_PASSWORD}".encode()).decode()
EVERY_FORM = [*SECRETS, SPECIAL_KEY, quote(SPECIAL_KEY, safe=""), quote_plus(SPECIAL_KEY)]
EVERY_FORM += [HEADER_VALUE, BASIC]


def test_every_form_of_a_secret_is_masked() -> None:
    url = f"http://{LLM_USER}:{LLM_PASSWORD}@h/v1?api_key={quote(SPECIAL_KEY, safe='')}"
    scrub = Scrubber(secrets_in_url(url))
    for form in (SPECIAL_KEY, quote(SPECIAL_KEY, safe=""), quote_plus(SPECIAL_KEY), BASIC):
        assert scrub.text(f"echo: {form}.") == "echo: ***.", form


def _everything(request: RecordedRequest) -> str:
    """What a careless server repeats: every header, query parameter and body field."""
    body = request.body
    return (f"query {json.dumps(request.query)} path {request.path} authorization "
            f"{request.headers.get('authorization')} extra_headers "
            f"{json.dumps(body.get('extra_headers'))} api_key {body.get('api_key')}")  # fmt: skip


def test_base_url_credentials_are_used_as_meant_and_shown_nowhere(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    agent_config = tmp_path / "agent.toml"
    agent_config.write_text("backoff_base_s = 0.01\nbackoff_max_s = 0.01\nmax_attempts = 3\n")
    with OpenAIServer() as llm:
        # the first turn's first two attempts fail (the agent warns and retries), echoing
        llm.script(*[lambda r: http_error(500, _everything(r))] * 2)
        llm.default = lambda r: text(f"{_everything(r)} Action: wait")
        netloc = llm.base_url.removeprefix("http://").split("/")[0]
        query = f"api-key={quote(SPECIAL_KEY, safe='')}&api-version=2"
        monkeypatch.setenv(
            "OPENAI_BASE_URL", f"http://{LLM_USER}:{LLM_PASSWORD}@{netloc}/v1?{query}"
        )
        body = {"api_key": BODY_KEY, "extra_headers": {"X-Org": HEADER_VALUE}}
        cmd = ["eval", "--env", "treasure-hunt", "--seeds", "0", "--agent", "llm"]
        cmd += ["--model", "test-model"]  # listed by the server: the preflight only lists
        cmd += ["--agent-config", str(agent_config), "--extra-body", json.dumps(body)]
        code, console = _textenvs(capsys, *cmd, "--out", str(tmp_path / "run"))
        assert code == 0, console
        warnings = caplog.text  # what the console shows outside pytest
        assert warnings.count("retrying") == 2 and "***" in warnings
        for request in llm.requests:  # the key as Bearer; query parameters as such
            assert request.headers["authorization"] == f"Bearer {API_KEY}"
            assert urlsplit(request.path).path == "/v1/chat/completions"
            assert request.query == {"api-key": SPECIAL_KEY, "api-version": "2"}
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    for content in [console, warnings, *(p.read_text(encoding="utf-8") for p in files)]:
        for form in EVERY_FORM:
            assert form not in content, form
