"""Python client of the HTTP service.

`ServiceClient` is a thin wrapper over the `/v1` endpoints. `RemoteEnv` quacks like a local
`TextEnv` (`reset`, `step`, `parse`, `rules`, `max_steps`, `action_schema`, `command_for`,
`random_command`), so `textenvs.episodes.loop.run_episode` plays it unchanged:

    env = remote_env_factory("http://127.0.0.1:8000")("treasure-hunt")
    result = asyncio.run(run_episode(env, make_agent("random"), seed=3))

It is the one remote env: `textenvs eval --env-url` and `textenvs train --env-url` both
play through it. Parsing, structured actions and random commands use the local scenario
code (pure functions of the text and `info`); the world itself lives on the server. One
version policy (`ServiceClient.checked_env_info`): a scenario installed here must be the
version the service serves, or the two would read replies differently, so a mismatch
stops before the first episode with one line naming both versions (`VersionMismatch`);
only a scenario this install lacks is played with the server as the sole judge. A bearer
token comes from `token=` or the `TEXTENVS_TOKEN` environment variable. A request over
one of the service's rate limits (`429`) is sent again after its `Retry-After`, for up to
`patience` seconds in all.
"""

from __future__ import annotations

import os
import time
from typing import Any

import httpx
import numpy as np

from textenvs import __version__
from textenvs.core import registry
from textenvs.core.env import ActionSchema, TextEnv
from textenvs.core.redact import redact_url
from textenvs.service.versions import SERVICE_API

TOKEN_ENV = "TEXTENVS_TOKEN"


class ServiceClientError(RuntimeError):
    """The service answered with an error (`status`, `code`, `message` from its JSON)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class ServiceVersionError(RuntimeError):
    """The server no longer serves this client's protocol version (one line: which
    versions differ and what to do)."""


class VersionMismatch(ValueError):
    """The service serves a scenario at another version than this install's."""


class ServiceClient:
    """One HTTP connection pool to a service; safe to share between `RemoteEnv`s."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        patience: float = 60.0,
    ) -> None:
        token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )
        #: seconds a request may spend waiting out `429`s (as their Retry-After says)
        self.patience = patience

    def request(
        self, method: str, path: str, json: Any = None, params: dict[str, str] | None = None
    ) -> Any:
        waited = 0.0
        while True:
            response = self._http.request(method, path, json=json, params=params)
            wait = _retry_after(response)
            if wait is None or waited + wait > self.patience:
                break
            time.sleep(wait)  # over a rate limit: the service says when to come back
            waited += wait
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
                code, message = str(error["code"]), str(error["message"])
            except (ValueError, KeyError, TypeError):
                code, message = "http_error", response.text[:200]
            raise ServiceClientError(response.status_code, code, message)
        return response.json() if response.content else None

    def health(self) -> dict[str, Any]:
        return self.request("GET", "/v1/health")

    def api(self) -> int:
        """The server's protocol version (`textenvs.service.versions`; 1 for a server
        from before they were numbered), after checking that it still serves this
        client's: else a `ServiceVersionError`, before any session is made."""
        health = self.health()
        served = int(health.get("api", 1))
        oldest = int(health.get("oldest_client_api", 1))
        if oldest > SERVICE_API:
            raise ServiceVersionError(
                f"runs textenvs {health.get('version')} with service API {served}, which "
                f"serves clients of API {oldest} or later; this textenvs {__version__} "
                f"speaks API {SERVICE_API}: upgrade textenvs here (pip install -U textenvs)"
            )
        return served

    def envs(self) -> list[dict[str, Any]]:
        return self.request("GET", "/v1/envs")["envs"]

    def env_info(self, env: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/envs/{env}")

    def checked_env_info(self, env: str) -> dict[str, Any]:
        """`env_info`, after checking that the service serves the version of `env` this
        install has (`VersionMismatch` otherwise; any version of a scenario not installed)."""
        meta = self.env_info(env)
        local = _local_scenario(meta["name"])
        served = str(meta["version"])
        if local is not None and str(local.version) != served:
            raise VersionMismatch(
                f"the service at {redact_url(self.base_url)} serves {meta['name']} "
                f"v{served}, this install v{local.version}: upgrade textenvs on the client "
                "or the server so both run the same version"
            )
        return meta

    def create(
        self,
        env: str,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        label: str | None = None,
    ) -> dict[str, Any]:
        body = {"env": env, "seed": seed, "options": options}
        return self.request("POST", "/v1/sessions", {**body, "label": label} if label else body)

    def delete_labelled(self, label: str) -> int:
        """Delete every session of this client created with `label`; how many there were."""
        return int(self.request("DELETE", "/v1/sessions", params={"label": label})["deleted"])

    def step(
        self, session_id: str, command: str | None = None, action: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        body = {"command": command} if action is None else {"action": action}
        return self.request("POST", f"/v1/sessions/{session_id}/step", body)

    def reset(
        self, session_id: str, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        body = {"seed": seed, "options": options}
        return self.request("POST", f"/v1/sessions/{session_id}/reset", body)

    def get(self, session_id: str) -> dict[str, Any]:
        return self.request("GET", f"/v1/sessions/{session_id}")

    def delete(self, session_id: str) -> None:
        self.request("DELETE", f"/v1/sessions/{session_id}")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RemoteEnv:
    """A scenario played on a service, with the local env's reset/step shape."""

    def __init__(
        self, client: ServiceClient, env: str, *, own_client: bool = False, label: str | None = None
    ) -> None:
        meta = client.checked_env_info(env)
        self.client = client
        self._own_client = own_client
        self.label = label  # the server-side sessions' label (see `remote_env_factory`)
        self.name: str = meta["name"]
        self.title: str = meta["title"]
        self.version: str = meta["version"]
        self.max_steps: int = meta["max_steps"]
        self.rules: str = meta["rules"]
        self.action_json_schema: dict[str, Any] = meta["action_schema"]
        local = _local_scenario(self.name)
        self._local = local() if local is not None else None
        self.action_schema: type[ActionSchema] = (
            self._local.action_schema if self._local is not None else ActionSchema
        )
        self.session_id: str | None = None
        self.seed: int | None = None
        self._info: dict[str, Any] = {}
        self._done = True

    # ----- the TextEnv shape ----------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        data: dict[str, Any] | None = None
        if self.session_id is not None:
            try:
                data = self.client.reset(self.session_id, seed, options)
            except ServiceClientError as exc:
                if exc.code != "unknown_session":  # expired: start a new one below
                    raise
        if data is None:
            data = self.client.create(self.name, seed, options, self.label)
            self.session_id = data["session_id"]
        self.seed = data["seed"]
        self._info, self._done = data["info"], False
        return data["observation"], data["info"]

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.session_id is None or self._done:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        data = self.client.step(self.session_id, command=action)
        return self._stepped(data)

    def step_action(self, action: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """A structured action, validated by the server against the action schema."""
        if self.session_id is None or self._done:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        return self._stepped(self.client.step(self.session_id, action=action))

    def parse(self, text: str) -> Any:
        # Without the scenario installed here the server is the only judge.
        return self._local.parse(text) if self._local is not None else text

    def command_for(self, arguments: dict[str, Any]) -> str:
        if self._local is None:
            raise NotImplementedError(
                f"structured actions for '{self.name}' need the scenario installed locally; "
                "use step_action() to let the server validate them"
            )
        return self._local.command_for(arguments)

    def random_command(self, info: dict[str, Any], rng: np.random.Generator) -> str:
        if self._local is not None:
            return self._local.random_command(info, rng)
        forms = info["valid_commands"]
        return str(forms[int(rng.integers(len(forms)))]).split(" (")[0]

    @property
    def done(self) -> bool:
        return self._done

    @property
    def steps_used(self) -> int:
        return int(self._info.get("steps_used", 0))

    @property
    def steps_left(self) -> int:
        return int(self._info.get("steps_left", self.max_steps))

    def close(self) -> None:
        """Delete the server-side session (and the client, if this env made it)."""
        if self.session_id is not None:
            try:
                self.client.delete(self.session_id)
            except ServiceClientError as exc:
                if exc.code != "unknown_session":
                    raise
            self.session_id = None
        if self._own_client:
            self.client.close()

    def __enter__(self) -> RemoteEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _stepped(self, data: dict[str, Any]) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._info = data["info"]
        self._done = bool(data["terminated"] or data["truncated"])
        return (
            data["observation"],
            float(data["reward"]),
            bool(data["terminated"]),
            bool(data["truncated"]),
            data["info"],
        )


def _retry_after(response: httpx.Response) -> float | None:
    """The seconds a `429` asks to wait (1 when it does not say); None for any other answer."""
    if response.status_code != 429:
        return None
    try:
        return max(0.0, float(response.headers.get("retry-after", 1)))
    except ValueError:
        return 1.0


def _local_scenario(name: str) -> type[TextEnv[Any, Any]] | None:
    """The scenario's class, when this install has it."""
    try:
        return registry.get(name).load()
    except registry.UnknownEnvError:
        return None


def service_error(exc: BaseException, url: str) -> str | None:
    """A one-line message for a failure to use the service at `url` (None: not one)."""
    if isinstance(exc, VersionMismatch):
        return str(exc)
    if isinstance(exc, ServiceClientError):
        return f"the service at {url} answered {exc}"
    if isinstance(exc, ServiceVersionError):
        return f"the service at {url} {exc}"
    if isinstance(exc, httpx.TransportError):
        detail = str(exc) or type(exc).__name__
        return f"cannot reach a textenvs service at {url} ({detail})"
    if isinstance(exc, httpx.HTTPError | ValueError | KeyError):  # not JSON / not our API
        return f"{url} does not look like a textenvs service ({type(exc).__name__}: {exc})"
    return None


class RemoteEnvFactory:
    """`make(env_name) -> RemoteEnv` on the service `client` speaks to, like `textenvs.make`
    for local envs. The envs share the client's connection pool (`close()` closes it);
    close each env to free its session. With a `label`, every session they open carries
    it, so that a process started after this one was killed can delete what it left open
    (`ServiceClient.delete_labelled`)."""

    def __init__(self, client: ServiceClient, label: str | None = None) -> None:
        self.client = client
        self.label = label

    def __call__(self, env_name: str) -> RemoteEnv:
        return RemoteEnv(self.client, env_name, label=self.label)

    def close(self) -> None:
        self.client.close()


def remote_env_factory(
    url: str, *, token: str | None = None, timeout: float = 30.0, label: str | None = None
) -> RemoteEnvFactory:
    """A `RemoteEnvFactory` for the service at `url` (its own connection pool)."""
    return RemoteEnvFactory(ServiceClient(url, token=token, timeout=timeout), label)
