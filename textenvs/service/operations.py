"""What a session can do, shared by the `/v1` routes and the OpenEnv endpoints: create,
step and reset, with each client's limits applied (open sessions, creations per minute,
steps per second) and every rejection a `ServiceError` that changes nothing.

The rates are taken before an operation starts, by whoever receives the request (a
route's `admits`, before its body is read; a WebSocket's message loop), since work over
a rate waits its turn there (`tenancy.RateLimiter.turn`); the operations themselves
check what only they can see (open sessions, the session's state)."""

from __future__ import annotations

import secrets
from typing import Any

from pydantic import ValidationError

from textenvs.core import registry
from textenvs.core.parsing import excerpt
from textenvs.service.memory import SessionFreezer
from textenvs.service.models import ScenarioInfo
from textenvs.service.reading import CommandReader, step_parsed
from textenvs.service.sessions import ServiceError, Session, SessionStore
from textenvs.service.tenancy import ClientLimits, body_bytes_limiter, limiters
from textenvs.service.transport.fairness import Turns

# What a scenario raises for options it rejects; the message is meant for the caller.
OPTION_ERRORS = (ValueError, TypeError, KeyError, ArithmeticError)


def safe(text: str, limit: int = 300) -> str:
    """User-influenced text made printable ASCII and short before it goes in a response."""
    return excerpt(text, limit)


def validation_details(errors: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "loc": [p if isinstance(p, int) else safe(str(p), 60) for p in e.get("loc", ())],
            "msg": safe(str(e.get("msg", "")), 300),
            "type": safe(str(e.get("type", "")), 60),
        }
        for e in errors[:20]
    ]


def scenario_info(scenario: registry.Scenario) -> ScenarioInfo:
    cls = scenario.load()
    try:
        from textenvs.prompts import rules_text

        rules = rules_text(scenario.name)
    except FileNotFoundError:  # a scenario whose rules text is not written yet
        rules = ""
    return ScenarioInfo(
        name=scenario.name,
        env_id=scenario.env_id,
        title=scenario.title,
        version=str(cls.version),
        max_steps=int(cls.max_steps),
        levels=list(cls.levels),
        default_level=cls.default_level,
        rules=rules,
        action_schema=cls.action_schema.model_json_schema(),
    )


class Operations:
    def __init__(
        self,
        store: SessionStore,
        limits: ClientLimits,
        reader: CommandReader | None = None,
        max_body_bytes: int = 256 * 1024,
    ) -> None:
        self.store = store
        self.creates, self.resets, self.steps, self.reads = limiters(limits, store.owner_cap)
        self.bodies = body_bytes_limiter(limits, max_body_bytes)  # and WebSocket messages
        self.turns = Turns()  # clients take turns starting requests (transport/fairness.py)
        self.reader = reader or CommandReader()
        self.freezer: SessionFreezer | None = None  # see memory.py
        self._catalogue: dict[str, ScenarioInfo] = {}

    def info(self, name: str) -> ScenarioInfo:
        try:
            scenario = registry.get(name)
        except registry.UnknownEnvError as exc:
            raise ServiceError(404, "unknown_env", safe(exc.message, 400)) from None
        if scenario.name not in self._catalogue:
            self._catalogue[scenario.name] = scenario_info(scenario)
        return self._catalogue[scenario.name]

    async def admit(self, client: str) -> None:
        """Takes a creation from `client`'s allowance (waiting its turn), then a 429 or 503
        unless it may hold another session. Comes before `create` (a route's `admits`)."""
        self.store.reserve(client)  # a client at its cap waits for nothing
        await self.creates.turn(client)
        self.store.reserve(client)

    def create(
        self,
        client: str,
        env: str,
        seed: int | None,
        options: dict[str, Any] | None,
        *,
        label: str | None = None,
    ) -> Session:
        """A new session (named `label`, if given), once `admit` took its creation."""
        name = self.info(env).name
        self.store.reserve(client)  # others may have filled the server while this waited
        scenario_env = registry.make(name)
        seed, observation, info = reset_env(scenario_env, name, seed, options)
        session = Session(
            self.store.new_id(), name, scenario_env, seed, observation, info, client, label
        )
        self.store.add(session)
        if self.freezer is not None:
            self.freezer.created()
        return session

    async def step(
        self, client: str, session_id: str, command: str | None, action: dict[str, Any] | None
    ) -> dict[str, Any]:
        """One turn (the step already taken from `client`'s allowance)."""
        session = self.store.get(session_id, client)
        async with session.lock:
            self.store.get(session_id, client)  # it may have been deleted while we waited
            env = session.env
            if env.done:
                raise ServiceError(409, "episode_over", "the episode has ended: reset first")
            text = command if action is None else command_for(env, action)
            outcome = await self.reader.read(client, env, text)
            self.store.get(session_id, client)
            observation, reward, terminated, truncated, info = step_parsed(env, text, outcome)
            session.observation, session.info = observation, info
            session.touch()
            if session.before_answer is not None:
                await session.before_answer()
        return {
            "observation": observation,
            "reward": float(reward),
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": info,
        }

    async def reset(
        self, client: str, session_id: str, seed: int | None, options: dict[str, Any] | None
    ) -> Session:
        """A new episode (the reset already taken from `client`'s allowance)."""
        session = self.store.get(session_id, client)
        async with session.lock:
            self.store.get(session_id, client)
            seed, observation, info = reset_env(session.env, session.env_name, seed, options)
            session.seed, session.observation, session.info = seed, observation, info
            session.touch()
        return session


def reset_env(env: Any, name: str, seed: int | None, options: Any) -> tuple[int, str, dict]:
    """Reset with `seed` (a random one when None); rejected options are a 422."""
    seed = secrets.randbelow(2**31) if seed is None else seed
    try:
        observation, info = env.reset(seed=seed, options=options)
    except OPTION_ERRORS as exc:
        if not options:  # without options this is a bug, not the caller's mistake
            raise
        raise ServiceError(
            422, "invalid_options", safe(f"{name} rejected the options: {exc}", 400)
        ) from None
    return seed, observation, info


def command_for(env: Any, action: dict[str, Any]) -> str:
    try:
        return str(env.command_for(action))
    except ValidationError as exc:
        raise ServiceError(
            422,
            "invalid_action",
            "the action does not match the scenario's action schema",
            details=validation_details(exc.errors()),
        ) from None
    except (ValueError, TypeError) as exc:
        raise ServiceError(422, "invalid_action", safe(str(exc))) from None
