"""Train on envs that run elsewhere: a `textenvs serve` service, through OpenEnv's client.

TRL's OpenEnv examples play their environments through an OpenEnv `EnvClient`; here each
rollout holds one `TextenvsEnv` session (a WebSocket) on the service's OpenEnv endpoint
for its scenario. Replies are read by the same parser on both sides: the conversation
reads them with the local copy of the scenario (for re-asks), and the service executes
them. A service of another version than the one installed is refused, since the two
would read replies differently. Needs `pip install 'textenvs[train,openenv]'`.
"""

from __future__ import annotations

from typing import Any

from textenvs.core.registry import get as registry_get


class OpenEnvEpisodeEnv:
    """One scenario on a service, with the reset/step shape a rollout plays."""

    def __init__(self, service_url: str, name: str) -> None:
        from textenvs.service.openenv_client import TextenvsEnv

        self.local = registry_get(name).load()()
        self.client = TextenvsEnv.for_scenario(service_url, name).sync()
        self.client.connect()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        result = self.client.reset(seed=seed, options=options)
        return result.observation.text, result.observation.info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        from textenvs.service.openenv_client import TextenvsAction

        result = self.client.step(TextenvsAction(command=action))
        observation = result.observation
        return (
            observation.text,
            float(result.reward or 0.0),
            observation.terminated,
            observation.truncated,
            observation.info,
        )

    def parse(self, text: str) -> Any:
        return self.local.parse(text)

    def close(self) -> None:
        self.client.close()


def openenv_factory(service_url: str) -> Any:
    """`make(env_name)` for envs on the service at `service_url`, after checking that it
    serves the installed version of each scenario asked for."""
    from textenvs.service.client import ServiceClient

    checked: set[str] = set()

    def make(name: str) -> OpenEnvEpisodeEnv:
        if name not in checked:
            with ServiceClient(service_url) as client:
                served = str(client.env_info(name)["version"])
            local = str(registry_get(name).load().version)
            if served != local:
                raise ValueError(
                    f"the service at {service_url} serves {name} v{served}, this install "
                    f"v{local}: train against the same version"
                )
            checked.add(name)
        return OpenEnvEpisodeEnv(service_url, name)

    return make
