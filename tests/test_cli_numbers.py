"""Bad numbers and URLs on the command line are one-line errors (exit 2), never a
traceback, a wrapped value or a run that eats memory; preflight gives up on a hanging
endpoint quickly."""

from __future__ import annotations

import time

import pytest

from benchmarks.support.openai_server import OpenAIServer, stall
from textenvs.agents.llm import preflight
from textenvs.agents.llm.config import LLMConfig
from textenvs.cli import main

RUN = ["eval", "--env", "treasure-hunt", "--seeds", "0", "--agent"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["serve", "--port", "70000"], "--port: must be at least 0 and at most 65535"),
        (["serve", "--port", "-1"], "--port"),
        (["serve", "--idle-timeout", "-1"], "--idle-timeout: must be at least 0"),
        (["serve", "--idle-timeout", "nan"], "--idle-timeout: must be finite"),
        (["serve", "--request-timeout", "0"], "--request-timeout: must be more than 0"),
        (["serve", "--command-timeout", "inf"], "--command-timeout: must be finite"),
        (["serve", "--max-body-bytes", "0"], "--max-body-bytes: must be at least 1"),
        (["serve", "--max-header-bytes", "x"], "--max-header-bytes: not an integer"),
        (["serve", "--keep-alive-timeout", "0"], "--keep-alive-timeout"),
        ([*RUN, "llm", "--model", "m", "--temperature", "nan"], "--temperature: must be finite"),
        ([*RUN, "llm", "--model", "m", "--temperature", "3"], "--temperature: must be at least 0"),
        ([*RUN, "llm", "--model", "m", "--base-url", "http://[::1"], "bad base URL"),
        ([*RUN, "llm", "--model", "m", "--base-url", "http://h:99999/v1"], "bad base URL"),
        ([*RUN, "llm", "--model", "m", "--base-url", "ftp://h/v1"], "bad base URL"),
    ],
)
def test_bad_numbers_and_urls_are_one_line_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if ": error: " in line]) == 1


def test_a_huge_seed_range_is_refused_before_it_is_expanded(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "--env", "treasure-hunt", "--agent", "random", "--out", f"{tmp_path}/r"]
    started = time.monotonic()
    try:
        code = main([*argv, "--seeds", "0-100000000"])
    except SystemExit as exc:
        code = exc.code
    assert code == 2 and time.monotonic() - started < 5
    assert "over 1,000,000 seeds" in capsys.readouterr().err


def test_preflight_gives_up_on_a_hanging_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "READ_S", 0.5)
    with OpenAIServer(default=stall(30)) as server:
        config = LLMConfig(model="not-listed", base_url=server.base_url)  # a completion
        with pytest.raises(preflight.PreflightError, match="did not answer in time"):
            preflight.check(config)
