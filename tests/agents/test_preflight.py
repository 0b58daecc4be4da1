"""The preflight check before LLM runs: against the loopback OpenAI server, a closed port,
and through `textenvs eval` / `textenvs run` (one line, exit 2, no run started)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.support.openai_server import OpenAIServer, http_error, server_error, text
from tests.agents.conftest import KEY
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.preflight import PreflightError, check
from textenvs.cli import main


@pytest.fixture
def dead_url() -> Iterator[str]:
    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{closed.getsockname()[1]}/v1"


def test_a_listed_model_needs_no_completion(server: OpenAIServer) -> None:
    assert "lists model 'test-model'" in check(
        LLMConfig(model="test-model", base_url=server.base_url)
    )
    assert server.requests == []  # the models list was enough


def test_an_unlisted_model_costs_one_token(server: OpenAIServer) -> None:
    server.script(text("ready"))
    cfg = LLMConfig(model="other", base_url=server.base_url, extra_body={"top_k": 3})
    assert "answered model 'other'" in check(cfg)
    (request,) = server.requests
    assert request.body["max_tokens"] == 1 and request.body["top_k"] == 3
    reasoning = cfg.model_copy(update={"max_tokens_field": "max_completion_tokens"})
    server.script(text("ready"))
    check(reasoning)
    assert server.requests[-1].body["max_completion_tokens"] == 1


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        (http_error(404, "model 'other' does not exist"), "refused model 'other' (HTTP 404"),
        (http_error(401, "Incorrect API key"), "rejected the API key (HTTP 401"),
        (http_error(400, "unknown field top_q"), "--extra-body"),
    ],
)
def test_refusals_name_what_to_fix(server: OpenAIServer, behaviour: object, expected: str) -> None:
    server.script(behaviour)
    with pytest.raises(PreflightError) as caught:
        check(LLMConfig(model="other", base_url=server.base_url))
    message = str(caught.value)
    assert expected in message and "\n" not in message and KEY not in message
    if "404" in expected:
        assert "check --model and --base-url; the endpoint lists: test-model" in message
    if "401" in expected:
        assert "$OPENAI_API_KEY" in message


def test_busy_server_is_retried_briefly_then_reported(server: OpenAIServer) -> None:
    server.script(server_error(503), text("ready"))
    check(LLMConfig(model="other", base_url=server.base_url))
    server.script(*[server_error(503)] * 3)
    with pytest.raises(PreflightError, match="not serving requests now"):
        check(LLMConfig(model="other", base_url=server.base_url))


def test_unreachable_endpoint_and_missing_key(
    dead_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(
        PreflightError, match=r"cannot be reached \(ConnectError\): check --base-url"
    ):
        check(LLMConfig(model="m", base_url=dead_url))
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(PreflightError, match="no API key: set the environment variable MY_KEY"):
        check(LLMConfig(model="m", api_key_env="MY_KEY"))


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str, float]:
    """`textenvs ARGS` in this process: (exit code, stdout, stderr, seconds)."""
    started = time.monotonic()
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err, time.monotonic() - started


def test_cli_stops_at_once_with_one_line(
    dead_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    evaluate = ["eval", "--env", "all", "--agent", "llm", "--model", "gpt-4o-mini"]
    evaluate += ["--seeds", "0-99", "--out", str(tmp_path / "nokey")]
    code, _, err, _ = _cli(capsys, *evaluate)
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [
        "textenvs eval: error: preflight: no API key: set the environment variable "
        "OPENAI_API_KEY (or give --base-url for a server that needs none)"
    ]
    assert not (tmp_path / "nokey").exists()  # nothing was started

    evaluate = ["eval", "--env", "all", "--agent", "llm", "--model", "m", "--seeds", "0-99"]
    code, _, err, took = _cli(capsys, *evaluate, "--base-url", dead_url, "--out", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"the endpoint {dead_url} cannot be reached" in err
    assert took < 30  # one refused connection, not 500 episodes of retries

    run = ["run", "treasure-hunt", "--seed", "0", "--agent", "llm", "--model", "m"]
    code, out, err, _ = _cli(capsys, *run, "--base-url", dead_url)
    assert code == 2 and "textenvs run: error: preflight: the endpoint" in err
    assert "Outcome" not in out  # no episode was played


def test_no_preflight_skips_the_check(
    dead_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = ["run", "treasure-hunt", "--seed", "0", "--agent", "llm", "--base-url", dead_url]
    code, out, _, _ = _cli(capsys, *run, "--no-preflight", "--agent-config", _fast(tmp_path))
    assert code == 3  # played, and the episode ended in an agent error
    assert "Outcome: agent_error" in out and "connection error" in out


def _fast(tmp_path: Path) -> str:
    """An agent file with a fast retry budget (the CLI has no flags for it)."""
    path = tmp_path / "fast.toml"
    path.write_text("model = 'm'\nmax_attempts = 2\nbackoff_base_s = 0.01\n")
    return str(path)
