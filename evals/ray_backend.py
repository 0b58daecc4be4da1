"""`textenvs eval --backend ray`: episodes played by Ray actors, recorded by the driver.

Why actors, not one task per episode: an episode is mostly waiting on a model, so one
process can play dozens at once on its event loop, exactly as the local backend does.
Each `EpisodeActor` is an async actor (one CPU by default, spread over the nodes) holding
a few `EpisodePlayer`s (each owns one env per scenario and builds a fresh agent per
episode); `max_concurrency` bounds the episodes it plays at once. The driver keeps the C
episode slots of `--concurrency` (so concurrency is bounded cluster-wide), sends each key
to an actor and writes what comes back through the same store as the local backend:
`episodes.jsonl`, trajectories, summary, lock, `--resume` and `--retry-errors` are
unchanged. A task per episode would pay a scheduling round trip and an agent/env set-up
in a fresh worker per episode, and could not keep HTTP connections open across episodes.

An actor that dies (its process killed, its node lost) loses only the episodes it had in
flight: the driver plays each of them again on the next actor (Ray restarts the dead one),
up to `RERUNS` times, then records it as an agent error (`--retry-errors` replays it).
The unit of work sent to an actor is a group of keys played in order on one player: up to
`GROUP` keys when there are many episodes per slot (the runner keeps at least four groups
per slot), which spares episodes of a few ms most of a round trip each; for long (LLM)
runs a group is one episode. An actor lost mid-group loses, and replays, that group.
"""

from __future__ import annotations

import logging
import math
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray
import ray.exceptions

from textenvs.agents.llm.config import NODE_IP_ENV, LLMConfig
from textenvs.episodes.record import EpisodeResult
from textenvs.evals.metrics import Key
from textenvs.evals.plan import EvalPlan
from textenvs.evals.players import AgentFactory, EpisodePlayer, crashed_result
from textenvs.evals.store import stem

RERUNS = 3  # plays of one episode lost with its actor before it is recorded as an error
GROUP = 8  # keys per actor call at most: fewer round trips for episodes of a few ms
CONNECT_TIMEOUT_S = 5.0
START_TIMEOUT_S = 180.0  # for the actors to be placed and to import textenvs
# What a lost actor looks like to the awaiting driver.
LOST = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
        ray.exceptions.ObjectLostError)  # fmt: skip


class RayBackendError(Exception):
    """The cluster cannot be used as asked (a one-line message)."""


class EpisodeActor:
    """Plays groups of episode keys on its node; registered as a Ray actor class."""

    def __init__(self, plan: EvalPlan, factory: AgentFactory) -> None:
        self.node = _node_address()
        os.environ.setdefault(NODE_IP_ENV, self.node)  # one set on the node (or sent) wins
        self.plan = plan
        self.factory = factory
        self._idle: list[EpisodePlayer] = []

    async def play(self, keys: list[Key]) -> list[EpisodeResult]:
        """Each key of the group, in order, on one player (so on the same envs)."""
        player = self._idle.pop() if self._idle else EpisodePlayer(self.plan, self.factory)
        try:
            return await player.play(keys)
        finally:
            self._idle.append(player)

    def where(self) -> tuple[str, int]:
        """The node address and process id of this actor."""
        return self.node, os.getpid()

    async def preflight(self) -> str | None:
        """Check the LLM endpoint from here (None: fine, or the one-line failure)."""
        config = getattr(self.factory(), "cfg", None)
        if not isinstance(config, LLMConfig):
            return None
        from textenvs.agents.llm.preflight import PreflightError, preflight

        try:
            await preflight(config)
        except PreflightError as exc:
            return str(exc)
        return None


def _node_address() -> str:
    """The address this node joined the cluster with (`ray start --node-ip-address`), which
    may differ from the one the routing table gives."""
    node_id = ray.get_runtime_context().get_node_id()
    for node in ray.nodes():
        if node["NodeID"] == node_id:
            return str(node["NodeManagerAddress"])
    return ray.util.get_node_ip_address()


@dataclass
class RayBackend:
    """Plays a plan's episodes on Ray actors (see the module docstring).

    `address`: the cluster (`ray.init`'s: None is $RAY_ADDRESS, else a cluster started on
    this machine, else a private one). `actors`: how many (default one per CPU of the
    cluster, at most the plan's concurrency). `env_vars`: environment variables the actors
    need (e.g. the API key), sent with them. `on_note(text)`: what is worth telling.
    """

    plan: EvalPlan
    factory: AgentFactory
    address: str | None = None
    max_group: int = GROUP
    actors: int | None = None
    env_vars: dict[str, str] = field(default_factory=dict)
    on_note: Callable[[str], None] | None = None
    #: episodes played again because their actor was lost
    reruns: int = 0
    _handles: list[Any] = field(default_factory=list)
    _connected_here: bool = False

    def connect(self) -> None:
        """Join the cluster (`RayBackendError` when it cannot be reached)."""
        if ray.is_initialized():
            return
        where = self.address or os.environ.get("RAY_ADDRESS") or "(auto)"
        host, _, port = where.rpartition(":")
        if port.isdigit() and "//" not in host:  # ray.init would retry for minutes
            try:
                socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
            except OSError as exc:
                raise RayBackendError(
                    f"cannot reach the Ray cluster at {where} ({exc.strerror or exc}): "
                    "check --ray-address (the head's GCS port, 6379 by default)"
                ) from None
        try:
            ray.init(
                address=self.address,
                log_to_driver=False,  # the driver prints progress and results only
                logging_level=logging.ERROR,
                configure_logging=True,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayBackendError(f"cannot join the Ray cluster at {where}: {exc}") from None
        self._connected_here = True

    def start(self) -> None:
        """Connect, place the actors and wait until each has started."""
        if self._handles:
            return
        self.connect()
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        count = self.actors or max(1, min(self.plan.concurrency, int(cpus)))
        slots = math.ceil(self.plan.concurrency / count)
        options: dict[str, Any] = {
            "num_cpus": min(1.0, cpus / count),
            "max_concurrency": slots,
            "max_restarts": -1,  # a lost actor comes back; the driver replays its episodes
            "max_task_retries": 0,
            "scheduling_strategy": "SPREAD",
        }
        if self.env_vars:
            options["runtime_env"] = {"env_vars": dict(self.env_vars)}
        remote = ray.remote(EpisodeActor).options(**options)
        self._handles = [remote.remote(self.plan, self.factory) for _ in range(count)]
        try:
            placed = ray.get([h.where.remote() for h in self._handles], timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            self.stop()
            raise RayBackendError(
                f"the Ray cluster did not start {count} actor(s) of {options['num_cpus']:g} "
                f"CPU within {START_TIMEOUT_S:g} s: free CPUs, or pass fewer --ray-actors"
            ) from None
        nodes = len({node for node, _ in placed})
        self._note(f"ray: {count} actor(s) on {nodes} node(s), {slots} episode slot(s) each")

    def preflight(self) -> None:
        """The LLM endpoint checked from every actor, so a node-local endpoint is checked
        on its own node; raises `PreflightError` naming the nodes that failed."""
        from textenvs.agents.llm.preflight import PreflightError

        self.start()
        places = self.places()
        answers = ray.get([h.preflight.remote() for h in self._handles])
        failed: dict[str, list[str]] = {}
        for (node, _), error in zip(places, answers, strict=True):
            if error is not None:
                failed.setdefault(error, []).append(node)
        if failed:
            error, nodes = next(iter(failed.items()))
            raise PreflightError(f"on node(s) {', '.join(sorted(set(nodes)))}: {error}")

    def places(self) -> list[tuple[str, int]]:
        """(node address, pid) of each actor, in order."""
        return ray.get([h.where.remote() for h in self._handles])

    def player(self, index: int) -> _RayPlayer:
        return _RayPlayer(self, index)

    def stop(self) -> None:
        """End the actors (and leave the cluster if this backend joined it)."""
        for handle in self._handles:
            ray.kill(handle, no_restart=True)
        self._handles = []
        if self._connected_here:
            ray.shutdown()
            self._connected_here = False

    def _note(self, text: str) -> None:
        if self.on_note is not None:
            self.on_note(text)


class _RayPlayer:
    """One of the driver's episode slots: sends its keys to actor `index` (mod the count)."""

    def __init__(self, backend: RayBackend, index: int) -> None:
        self.backend = backend
        self.index = index

    async def play(self, keys: list[Key]) -> list[EpisodeResult]:
        handles = self.backend._handles
        cause = ""
        for attempt in range(RERUNS + 1):
            actor = handles[(self.index + attempt) % len(handles)]
            try:
                return await actor.play.remote(keys)
            except LOST as exc:
                cause = type(exc).__name__
                if attempt < RERUNS:
                    self.backend.reruns += len(keys)
                    names = ", ".join(stem(*key) for key in keys)
                    self.backend._note(f"a Ray actor was lost ({cause}): replaying {names}")
        error = RuntimeError(f"the Ray actor playing it was lost {RERUNS + 1} times ({cause})")
        return [crashed_result(key, "?", error) for key in keys]

    async def close(self) -> None:
        return None
