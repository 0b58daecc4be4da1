"""Fixtures shared by the LLM agent tests: a known API key and a loopback server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.support.openai_server import OpenAIServer

# A recognisable fake key: tests assert it never shows up in output or records.
KEY = "sk-test-SECRET-9f8e7d6c5b4a"


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as srv:
        yield srv
