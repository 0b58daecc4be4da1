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

A session's env is wrapped in `RecordedEnv` (`episodes.py`), which remembers each command
and how long the player took over it. When the episode ends, the commands are replayed
with what the service read from each (`textenvs.episodes.replay`: through `run_episode`,
each step `step_read`, nothing parsed again) on a fresh env with the same seed, in the
recorder's own process (`runs.ReplayProcess`), so the record and trajectory are built by
the same code as an eval's; a replay that does not end on what the player saw is logged
and not written.
The step that ended the episode answers once its record is written and fsynced: an
episode a player saw finish survives a kill -9 of the server.

Nothing here grows with the data already recorded, per request: what a run holds is read
incrementally (`runs.RunIndex`), `summary.json` is recomputed at most once every
`SUMMARY_EVERY_S` per run (and when the server stops), and the disk the recordings take
is bounded per client and in all (`runs.DiskQuota`): over a bound, a recorded session is
refused with `409 recording_full` and an episode that would not fit is not written.

A baseline set (`players.py`) is a named list of seeds each player works through in
order, once each: a seed handed out is not handed out again to that player while the
server runs (reloading the page resumes the same session), and when two sessions finish
the same set seed only the first is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from textenvs.core import registry
from textenvs.episodes.replay import replay_episode
from textenvs.evals import store
from textenvs.evals.metrics import Key
from textenvs.evals.plan import EvalPlan, build_config, default_command
from textenvs.evals.records import episode_record
from textenvs.evals.runner import write_summary
from textenvs.play.episodes import Episode, RecordedEnv, player_agent
from textenvs.play.players import NAME_PATTERN, BaselineSet, Player, client_folder
from textenvs.play.runs import (
    DEFAULT_MAX_MB,
    RUN_FOLDER_BYTES,
    DiskQuota,
    FileThreads,
    ReplayProcess,
    RunIndex,
    footprint,
)
from textenvs.service.reading import parsed_of
from textenvs.service.sessions import ServiceError, Session
from textenvs.service.tenancy import ANONYMOUS

log = logging.getLogger("textenvs.service")

SUMMARY_EVERY_S = 30.0  # a run's summary.json is recomputed at most this often


class HumanRecorder:
    """Writes finished human episodes under `root`, one run folder per player and set, at
    most `max_bytes` in all and `client_max_bytes` for each client (0: `max_bytes` shared
    evenly between the server's clients, see `share_between`)."""

    def __init__(
        self,
        root: Path,
        sets: list[BaselineSet] | tuple[BaselineSet, ...] = (),
        *,
        max_bytes: int = DEFAULT_MAX_MB * 2**20,
        client_max_bytes: int = 0,
    ) -> None:
        self.root = Path(root)
        self.sets = {s.name: s for s in sets}
        self.threads = FileThreads()
        self.replays = ReplayProcess()
        self.index = RunIndex(self.threads)
        self.quota = DiskQuota(self.threads, max_bytes, client_max_bytes)
        self._writers: dict[str, asyncio.Lock] = {}  # client -> one episode at a time
        self._held: dict[str, _Held] = {}  # run -> its lock and live users
        self._opening: dict[str, asyncio.Lock] = {}  # run -> one opening at a time
        self._opened: set[str] = set()  # the run folders checked (and made) so far
        self._handed_out: set[tuple[str, str, int]] = set()  # (run, env, seed)
        self._pending: set[asyncio.Task[None]] = set()  # episodes being written
        self._summaries: dict[str, asyncio.Task[None]] = {}  # run -> its summary to come
        self._stopping = asyncio.Event()  # summaries due are written at once

    def share_between(self, clients: int) -> None:
        self.quota.share(clients)

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

    def client_root(self, client: str) -> Path:
        """The folder of every run of `client`."""
        return self.root if client == ANONYMOUS else self.root / client_folder(client)

    def config(self, player: Player) -> dict[str, Any]:
        seeds = list(player.baseline.seeds) if player.baseline else []
        plan = EvalPlan(envs=registry.names(), seeds=seeds, concurrency=1)
        spec = player.baseline.spec if player.baseline else "chosen by the player"
        return build_config(
            plan,
            player_agent(player),
            agent_options={},
            prices=None,
            seeds_spec=spec,
            command=default_command(),
        )

    async def open_run(self, player: Player) -> None:
        """Create (or check and resume) the player's run folder and hold its lock, as an
        eval does while it runs, until every `open_run` has had its `release_run`. A
        `409 recording_full` when the client's or the server's recordings are at their
        bound (and no folder is made)."""
        await self.quota.room(player.client, self.client_root(player.client), self.root)
        async with self._opening.setdefault(player.run, asyncio.Lock()):
            if player.run in self._held:
                self._held[player.run].users += 1
                return
            new = player.run not in self._opened and not self.run_dir(player).exists()
            if new and not self.quota.take(player.client, RUN_FOLDER_BYTES):
                raise self.quota.full(player.client)
            try:
                lock = await self.threads.run(self._open, player)
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
            self._held[player.run] = _Held(lock)

    def release_run(self, player: Player) -> None:
        """One user of the run is done (its session ended, or its write is written)."""
        held = self._held.get(player.run)
        if held is None:
            return
        held.users -= 1
        if not held.users:
            del self._held[player.run]
            held.lock.release()

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
        for held in self._held.values():
            held.lock.release()
        self._held.clear()
        self.threads.close()
        self.replays.close()

    async def progress(self, player: Player) -> bytes:
        """The `GET /play/api/progress` answer (JSON): remade only when the run changed."""
        recorded = await self.index.episodes(self.run_dir(player))
        if recorded.progress is None:
            baseline = player.baseline
            recorded.progress = to_json(
                {
                    "run": player.run,
                    "set": baseline.name if baseline else None,
                    "seeds": list(baseline.seeds) if baseline else [],
                    "recorded": {env: sorted(seeds) for env, seeds in recorded.seeds.items()},
                }
            )
        return recorded.progress

    async def next_seed(self, player: Player, env_name: str) -> int:
        """The set's first seed this player has neither recorded nor been handed yet."""
        assert player.baseline is not None
        done = (await self.index.episodes(self.run_dir(player))).seeds.get(env_name, set())
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
        recorded = RecordedEnv(session.env, self, episode)
        session.env = recorded  # type: ignore[assignment]
        session.before_answer = recorded.written

    def finish(self, episode: Episode, final_observation: str) -> asyncio.Task[None]:
        """Start recording `episode` (it holds the run until written); the task never fails."""
        self._held[episode.player.run].users += 1  # the session still holds it: so does this
        task = asyncio.get_running_loop().create_task(self._record(episode, final_observation))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    async def settle(self) -> None:
        """Wait until every finished episode is written, then write every summary due (the
        server is stopping)."""
        while self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)
        self._stopping.set()
        while self._summaries:
            await asyncio.gather(*self._summaries.values(), return_exceptions=True)

    async def _record(self, episode: Episode, final_observation: str) -> None:
        """Replay and write `episode`, one episode of a client at a time: a client finishing
        episodes as fast as it can holds the recorder's process no more than its turn."""
        wall_s = time.monotonic() - episode.started
        player = episode.player
        try:
            async with (
                self._writers.setdefault(player.client, asyncio.Lock()),
                self._held[player.run].writing,
            ):
                if await self._write(episode, final_observation, wall_s):
                    self._summary_due(player)
        except Exception:  # a failed write must not take the service down
            log.exception("could not record a human episode of %s", episode.env_name)
        finally:
            self.release_run(player)

    async def _write(self, episode: Episode, final_observation: str, wall_s: float) -> bool:
        """Replay, encode and write one episode's trajectory and line (fsynced); False
        when it is not written (a set seed already recorded, a replay that differs, or no
        room left)."""
        player = episode.player
        run_dir = self.run_dir(player)
        recorded = await self.index.episodes(run_dir)
        earlier = recorded.counts[(episode.env_name, episode.seed)]
        if earlier and player.baseline is not None:
            return False  # a set seed counts once: the first episode that finished
        key: Key = (episode.env_name, episode.seed, earlier)
        replay = await self.replays.run(_replayed_record, episode, key, wall_s)
        seen, trajectory, text, record = replay
        if seen != final_observation:
            log.error("replay of %s seed %d differs", episode.env_name, episode.seed)
            return False
        size, line = recorded.size, len(store.record_line(record))
        cost = footprint(len(text)) + footprint(size + line) - footprint(size)
        if not self.quota.take(player.client, cost):
            log.warning("not recording an episode in %s: %s", player.run,
                        self.quota.full(player.client).message)  # fmt: skip
            return False
        await self.threads.run(_write_episode, run_dir, trajectory, text, record)
        return True

    def _summary_due(self, player: Player) -> None:
        """Have the run's summary recomputed soon (it holds the run until then)."""
        if player.run not in self._summaries:
            self._held[player.run].users += 1
            summary = asyncio.get_running_loop().create_task(self._summarise(player))
            self._summaries[player.run] = summary

    async def _summarise(self, player: Player) -> None:
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), SUMMARY_EVERY_S)
            async with self._held[player.run].writing:
                await self.threads.run(write_summary, self.run_dir(player), self.config(player))
        except Exception:
            log.exception("could not write the summary of %s", player.run)
        finally:
            del self._summaries[player.run]
            self.release_run(player)


@dataclass
class _Held:
    lock: store.RunLock
    users: int = 1  # live sessions, episodes being written and summaries to come
    writing: asyncio.Lock = field(default_factory=asyncio.Lock)  # one write at a time


def _replayed_record(
    episode: Episode, key: Key, wall_s: float
) -> tuple[str, str, str, dict[str, Any]]:
    """(the final observation of the episode played again by the eval's own runner, the
    trajectory path in the run, its text, the episodes.jsonl record): in the recorder's
    process (`ReplayProcess`)."""
    env = registry.make(episode.env_name)
    commands = [command for command, _ in episode.moves]
    agent = player_agent(episode.player, commands, [thinking for _, thinking in episode.moves])
    readings = [parsed_of(outcome) for outcome in episode.readings]
    result = asyncio.run(replay_episode(env, agent, episode.seed, readings=readings))
    result.wall_s = wall_s
    data = {"key": list(key), "model": None, **result.to_dict()}
    trajectory = store.trajectory_file(key)
    record = episode_record(result, key, None, trajectory)
    return result.final_observation, trajectory, store.trajectory_text(data), record


def _write_episode(run_dir: Path, trajectory: str, text: str, record: dict[str, Any]) -> None:
    """The trajectory first, then its line, each fsynced: a line is only ever written
    for a trajectory in place."""
    store.write_atomic(run_dir / trajectory, text)
    episodes = store.EpisodeLog(run_dir)
    try:
        episodes.append(record)
        episodes.sync()
    finally:
        episodes.close()
