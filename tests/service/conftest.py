"""Fixtures shared by the service tests."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest


@pytest.fixture
def http(url: str) -> Iterator[httpx.Client]:
    """A client of the server that the test module starts (its own `url` fixture)."""
    with httpx.Client(base_url=url, timeout=10) as client:
        yield client
