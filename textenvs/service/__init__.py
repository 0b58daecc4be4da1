"""The HTTP service (FastAPI) exposing every scenario as sessions, and its Python client.

`create_app(...)` builds the app (`textenvs serve` runs it under uvicorn);
`textenvs.service.client` has `ServiceClient`, `RemoteEnv` and `remote_env_factory`.
The server parts import FastAPI lazily, so the client works without it.
"""

from __future__ import annotations

from typing import Any

from textenvs.service.client import RemoteEnv, ServiceClient, ServiceClientError, remote_env_factory


def create_app(**kwargs: Any) -> Any:
    from textenvs.service.app import create_app as _create_app

    return _create_app(**kwargs)


__all__ = ["RemoteEnv", "ServiceClient", "ServiceClientError", "create_app", "remote_env_factory"]
