"""Ray tests run on a real local cluster (a head on loopback with 2 CPUs), started once
per test session and stopped after it. They skip when Ray (the `[ray]` extra) is absent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.support.ray_cluster import LocalCluster


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    pytest.importorskip("ray")
    head = LocalCluster(cpus=2).start()
    try:
        yield head
    finally:
        head.stop()
