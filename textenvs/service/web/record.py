"""Human episodes played on the page, recorded as eval runs (`textenvs serve --record DIR`).

Each player's episodes go to a run folder in exactly the `textenvs eval` format (agent
`human`): `DIR/<set>-<player>` for a baseline set, `DIR/free-<player>` for seeds the
player chose, under `DIR/<client>/` on a server with tokens: a client (credential) reads
and writes only its own players' runs. A folder is made only for a session the client's
limits admitted, and its lock (a file descriptor) is held while the run has a live
session or a pending write, so no flood of requests can fill the disk with folders or use
up file descriptors.
`textenvs report` then reads a human run like any model's and pairs it with
model runs on the (env, seed, episode) keys both played.

A session's env is wrapped in `RecordedEnv`, which remembers each command and how long the
player took over it. When the episode ends, the commands are replayed through
`run_episode` on a fresh env with the same seed, so the record and the trajectory are built
and written by the same code as an eval's; a replay that does not end on what the player
saw is logged and not written (it would mean the episode was not deterministic).

A baseline set is a named list of seeds each player works through in order, once each: a
seed handed out is not handed out again to that player while the server runs (reloading
the page resumes the same session), and when two sessions finish the same set seed only
the first is recorded.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textenvs.agents.base import Agent, Decision
from textenvs.core import registry
from textenvs.core.parsing import ParseError
from textenvs.evals import store
from textenvs.evals.episode import EpisodeResult, run_episode
from textenvs.evals.metrics import Key
from textenvs.evals.runner import (
    EvalPlan,
    build_config,
    default_command,
    episode_record,
    parse_seeds,
    write_summary,
)
from textenvs.service.reading import Outcome, read
from textenvs.service.sessions import ServiceError, Session
from textenvs.service.tenancy import ANONYMOUS

log = logging.getLogger("textenvs.service")

NAME_PATTERN = r"^[A-Za-z0-9_-]{1,40}$"  # player and set names: safe as folder names
FREE = "free"  # the run of seeds the player chose
MAX_SET_SEEDS = 10_000


class BaselineSetError(ValueError):
    """A `NAME=SEEDS` baseline set that cannot be used."""


@dataclass(frozen=True)
class BaselineSet:
    name: str
    seeds: tuple[int, ...]
    spec: str  # as given, e.g. "0-9" (the eval's `seeds` entry)


def parse_baseline_set(text: str) -> BaselineSet:
    """`"pilot=0-9"` -> the set `pilot` of seeds 0..9 (seed ranges as in `--seeds`)."""
    name, sep, spec = text.partition("=")
    name = name.strip().lower()
    if not sep or not re.fullmatch(NAME_PATTERN, name) or name == FREE:
        raise BaselineSetError(
            f"bad baseline set '{text}': use NAME=SEEDS, e.g. pilot=0-9 (NAME of letters, "
            f"digits, - and _, not '{FREE}')"
        )
    try:
        seeds = parse_seeds(spec)
    except ValueError as exc:
        raise BaselineSetError(f"bad baseline set '{text}': {exc}") from None
    if not seeds or len(seeds) > MAX_SET_SEEDS:
        raise BaselineSetError(f"bad baseline set '{text}': give 1 to {MAX_SET_SEEDS} seeds")
    return BaselineSet(name, tuple(seeds), spec.strip())


@dataclass(frozen=True)
class Player:
    name: str  # chosen by the player, lower case
    client: str  # the credential the page used (`anonymous` without tokens)
    baseline: BaselineSet | None

    @property
    def run(self) -> str:
        """The run folder, relative to the recording root."""
        run = f"{self.baseline.name if self.baseline else FREE}-{self.name}"
        return run if self.client == ANONYMOUS else f"{client_folder(self.client)}/{run}"


def client_folder(client: str) -> str:
    """A client's folder name: its name when that is a safe folder name, else a digest."""
    if re.fullmatch(NAME_PATTERN, client) and client not in (FREE, ANONYMOUS):
        return client
    return "client-" + hashlib.sha256(client.encode("utf-8")).hexdigest()[:16]


class ReplayAgent(Agent):
    """The human's recorded commands, played back (with the time each one took)."""

    name = "human"

    def __init__(self, player: Player, moves: list[tuple[str, float]] | None = None) -> None:
        self.player = player
        self._moves: Iterator[tuple[str, float]] = iter(moves or [])

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "player": self.player.name, "client": self.player.client}

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        command, thinking = next(self._moves)
        return Decision(command, raw=command, latency_s=thinking)


@dataclass
class Episode:
    player: Player
    env_name: str
    seed: int
    moves: list[tuple[str, float]] = field(default_factory=list)
    readings: list[Outcome] = field(default_factory=list)  # what the parser read, per move
    started: float = field(default_factory=time.monotonic)
    last_shown: float = field(default_factory=time.monotonic)


def replayed(readings: list[Outcome]) -> Callable[[str], Any]:
    """A parser that gives back what was read, in order: the replay parses nothing on the
    event loop (the service read each command off it, within its time limit)."""
    outcomes = iter(readings)

    def parse(_: str) -> Any:
        ok, value = next(outcomes)
        if ok:
            return value
        raise ParseError(*value)

    return parse


class RecordedEnv:
    """A session's env that remembers the episode it plays; everything else is the env's."""

    def __init__(self, env: Any, recorder: HumanRecorder, episode: Episode) -> None:
        self.env = env
        self._recorder = recorder
        self._episode: Episode | None = episode
        self._player: Player | None = episode.player  # holds the run until `close`

    def __getattr__(self, name: str) -> Any:
        return getattr(self.env, name)

    def step(self, command: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        episode = self._episode
        if episode is not None:  # the service has read it already: this costs nothing
            episode.readings.append(read(self.env.unwrapped.parse, command))
        stepped = self.env.step(command)
        if episode is not None:
            now = time.monotonic()
            episode.moves.append((command, now - episode.last_shown))
            episode.last_shown = now
            if stepped[2] or stepped[3]:
                self._episode = None
                self._recorder.finish(episode, stepped[0])
        return stepped

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        self._episode = None  # an episode the player restarts by hand is not a baseline one
        return self.env.reset(*args, **kwargs)

    def close(self) -> None:
        """The session ended: its hold on the run folder ends too."""
        if self._player is not None:
            self._recorder.release_run(self._player)
            self._player = None
        self.env.close()


class HumanRecorder:
    """Writes finished human episodes under `root`, one run folder per player and set."""

    def __init__(self, root: Path, sets: list[BaselineSet] | tuple[BaselineSet, ...] = ()) -> None:
        self.root = Path(root)
        self.sets = {s.name: s for s in sets}
        self._lock = asyncio.Lock()  # one writer at a time (all run folders)
        self._opened: set[str] = set()  # the run folders checked (and made) so far
        self._held: dict[str, tuple[store.RunLock, int]] = {}  # run -> (lock, live users)
        self._handed_out: set[tuple[str, str, int]] = set()  # (run, env, seed)
        self._pending: set[asyncio.Task[None]] = set()

    def player(self, client: str, name: str | None, set_name: str | None) -> Player:
        if not name or not re.fullmatch(NAME_PATTERN, name):
            raise ServiceError(
                422,
                "player_required",
                "this server records human runs: give a player name (1-40 letters, digits, - or _)",
            )
        baseline = None
        if set_name is not None:
            baseline = self.sets.get(set_name.lower())
            if baseline is None:
                raise ServiceError(404, "unknown_set", "no baseline set of that name")
        return Player(name.lower(), client, baseline)

    def run_dir(self, player: Player) -> Path:
        return self.root / player.run

    def config(self, player: Player) -> dict[str, Any]:
        seeds = list(player.baseline.seeds) if player.baseline else []
        plan = EvalPlan(envs=registry.names(), seeds=seeds, concurrency=1)
        spec = player.baseline.spec if player.baseline else "chosen by the player"
        return build_config(
            plan,
            ReplayAgent(player),
            agent_options={},
            prices=None,
            seeds_spec=spec,
            command=default_command(),
        )

    async def open_run(self, player: Player) -> None:
        """Create (or check and resume) the player's run folder and hold its lock, as an
        eval does while it runs, until every `open_run` has had its `release_run`."""
        async with self._lock:
            if player.run in self._held:
                lock, users = self._held[player.run]
                self._held[player.run] = (lock, users + 1)
                return
            try:
                lock = await asyncio.to_thread(self._open, player)
            except (store.RunDirError, ValueError, OSError) as exc:
                log.error("cannot record run %s: %s", player.run, exc)
                raise ServiceError(
                    409,
                    "run_mismatch",
                    f"the run folder '{player.run}' cannot take this player's episodes: it "
                    "holds another configuration (other scenario versions) or another "
                    "process is writing it; choose another player name",
                ) from None
            self._opened.add(player.run)
            self._held[player.run] = (lock, 1)

    def release_run(self, player: Player) -> None:
        """One user of the run is done (its session ended, or its write is written)."""
        lock, users = self._held.pop(player.run, (None, 0))
        if lock is None:
            return
        if users > 1:
            self._held[player.run] = (lock, users - 1)
        else:
            lock.release()

    def _open(self, player: Player) -> store.RunLock:
        lock = store.RunLock(self.run_dir(player))
        lock.acquire()
        try:
            if player.run not in self._opened:
                store.prepare(self.run_dir(player), self.config(player), resume=True)
        except BaseException:
            lock.release()
            raise
        return lock

    def close(self) -> None:
        """Release every run folder (the server is stopping)."""
        for lock, _ in self._held.values():
            lock.release()
        self._held.clear()

    async def recorded(self, player: Player) -> dict[str, list[int]]:
        """The seeds recorded so far in the player's run, by scenario (after pending writes)."""
        await self.settle()
        by_env: dict[str, list[int]] = {}
        for record in store.read_episodes(self.run_dir(player)):
            by_env.setdefault(str(record["env"]), []).append(int(record["seed"]))
        return {env: sorted(set(seeds)) for env, seeds in by_env.items()}

    async def next_seed(self, player: Player, env_name: str) -> int:
        """The set's first seed this player has neither recorded nor been handed yet."""
        assert player.baseline is not None
        done = set((await self.recorded(player)).get(env_name, []))
        for seed in player.baseline.seeds:
            if seed not in done and (player.run, env_name, seed) not in self._handed_out:
                return seed
        raise ServiceError(
            409,
            "set_complete",
            f"player '{player.name}' has played every seed of set '{player.baseline.name}' "
            f"in {env_name}",
        )

    def attach(self, session: Session, player: Player) -> None:
        """Record the episode the new session plays (its set seed is now handed out)."""
        self._handed_out.add((player.run, session.env_name, session.seed))
        episode = Episode(player, session.env_name, session.seed)
        session.env = RecordedEnv(session.env, self, episode)  # type: ignore[assignment]

    def finish(self, episode: Episode, final_observation: str) -> None:
        player = episode.player
        lock, users = self._held[player.run]  # the session still holds it
        self._held[player.run] = (lock, users + 1)  # and now the pending write too
        task = asyncio.get_running_loop().create_task(self._record(episode, final_observation))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def settle(self) -> None:
        """Wait until every finished episode is written."""
        while self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)

    async def _record(self, episode: Episode, final_observation: str) -> None:
        wall_s = time.monotonic() - episode.started
        player = episode.player
        try:
            agent = ReplayAgent(player, episode.moves)
            env = registry.make(episode.env_name)
            env.parse = replayed(episode.readings)  # type: ignore[method-assign]
            result = await run_episode(env, agent, episode.seed)
            if result.final_observation != final_observation:
                log.error("replay of %s seed %d differs", episode.env_name, episode.seed)
                return
            result.wall_s = wall_s
            async with self._lock:
                await asyncio.to_thread(self._write, player, result)
        except Exception:  # a failed write must not take the service down
            log.exception("could not record a human episode of %s", episode.env_name)
        finally:
            self.release_run(player)

    def _write(self, player: Player, result: EpisodeResult) -> None:
        run_dir = self.run_dir(player)
        assert result.seed is not None
        earlier = sum(
            1
            for r in store.read_episodes(run_dir)
            if (r["env"], r["seed"]) == (result.env, result.seed)
        )
        if earlier and player.baseline is not None:
            return  # a set seed counts once: the first episode that finished
        key: Key = (result.env, result.seed, earlier)
        data = {"key": list(key), "model": None, **result.to_dict()}
        trajectory = store.write_trajectory(run_dir, key, data)
        episodes = store.EpisodeLog(run_dir)
        try:
            episodes.append(episode_record(result, key, None, trajectory))
            episodes.sync()
        finally:
            episodes.close()
        write_summary(run_dir, self.config(player))
