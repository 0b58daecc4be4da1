"""A service of this protocol that says it serves every scenario at another version than
this install's: its health as this server's, the real scenario descriptions with version
"999", on a real socket (nothing else)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI

from textenvs import __version__
from textenvs.core import registry
from textenvs.service.background import serve_in_thread
from textenvs.service.operations import scenario_info
from textenvs.service.versions import OLDEST_CLIENT_API, SERVICE_API

OTHER_VERSION = "999"


@contextmanager
def other_version_service() -> Iterator[str]:
    """The base URL of a service whose `/v1/envs/{env}` names version `OTHER_VERSION`."""
    app = FastAPI()

    @app.get("/v1/health")
    def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "version": __version__,
            "api": SERVICE_API,
            "oldest_client_api": OLDEST_CLIENT_API,
        }

    @app.get("/v1/envs/{env}")
    def env_info(env: str) -> dict[str, Any]:
        info = scenario_info(registry.get(env)).model_dump()
        return info | {"version": OTHER_VERSION}

    with serve_in_thread(app) as url:
        yield url
