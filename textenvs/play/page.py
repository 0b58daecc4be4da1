"""The play page (`/play/`): people play every scenario in the browser, over the service's
own session API, and with `--record DIR` their finished episodes become eval runs.
`mount_play` puts it on a service app (`textenvs serve` and `textenvs play --web` do).

The page (plain HTML, CSS and JavaScript in `static/`, nothing fetched from elsewhere)
creates its session with `POST /play/api/sessions`, which is `POST /v1/sessions` plus a
player name and a baseline set, then steps it with `POST /v1/sessions/{id}/step` and reads
the rules from `GET /v1/envs/{env}`: a person reads the same text and meets the same parser
and wasted-turn rule as any agent. See docs/play.md.
"""

from __future__ import annotations

from importlib.resources import files
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, FastAPI, Query
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, Field

from textenvs.play.players import NAME_PATTERN
from textenvs.service.app import create_app as create_service_app
from textenvs.service.models import ERRORS, EnvName, Request, Seed, SessionCreated
from textenvs.service.operations import Operations
from textenvs.service.sessions import ServiceError, Session
from textenvs.service.tenancy import AdmittedRoute, Client, admits

if TYPE_CHECKING:  # the recorder (and the eval code it writes with) only when recording
    from textenvs.play.record import HumanRecorder

STATIC = {"app.js": "text/javascript", "style.css": "text/css", "index.html": "text/html"}
# Only this server's own files and API: nothing is loaded from anywhere else.
HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}
Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=40)]


class PlayRequest(Request):
    env: EnvName = Field(description="scenario name (or gymnasium id)")
    seed: Seed = None
    set: Name | None = Field(
        default=None, description="a baseline set: the server hands out its next seed"
    )
    player: Name | None = Field(
        default=None, description="the player's name (required when the server records)"
    )


class Recording(BaseModel):
    run: str = Field(description="the run folder the episode is recorded in")
    player: str
    set: str | None


class PlaySession(SessionCreated):
    recording: Recording | None = None


class BaselineSetInfo(BaseModel):
    name: str
    seeds: list[int]


class PlaySetup(BaseModel):
    recording: bool = Field(description="whether finished episodes are recorded as eval runs")
    sets: list[BaselineSetInfo]


class Progress(BaseModel):
    run: str
    set: str | None
    seeds: list[int] = Field(description="the set's seeds (empty for free play)")
    recorded: dict[str, list[int]] = Field(description="seeds recorded so far, by scenario")


def _static(name: str) -> Response:
    body = (files(__package__) / "static" / name).read_bytes()
    return Response(body, media_type=STATIC[name], headers=HEADERS)


def _created(session: Session, recording: Recording | None) -> PlaySession:
    return PlaySession(
        session_id=session.id,
        env=session.env_name,
        seed=session.seed,
        observation=session.observation,
        info=session.info,
        recording=recording,
    )


def play_router(ops: Operations, recorder: HumanRecorder | None) -> APIRouter:
    router = APIRouter(tags=["play"], responses=ERRORS, route_class=AdmittedRoute)

    @router.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("play/")

    @router.get("/play", include_in_schema=False)
    async def play_redirect() -> RedirectResponse:
        return RedirectResponse("play/")

    @router.get("/play/", include_in_schema=False)
    async def page() -> Response:
        return _static("index.html")

    @router.get("/play/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        if name not in STATIC or name == "index.html":
            raise ServiceError(404, "not_found", "no such file")
        return _static(name)

    @router.get("/play/api/setup", response_model=PlaySetup)
    async def setup(client: Client) -> PlaySetup:
        """Whether this server records human runs, and its baseline sets."""
        await ops.reads.turn(client)
        sets = recorder.sets.values() if recorder else ()
        return PlaySetup(
            recording=recorder is not None,
            sets=[BaselineSetInfo(name=s.name, seeds=list(s.seeds)) for s in sets],
        )

    @router.post("/play/api/sessions", status_code=201, response_model=PlaySession)
    @admits(ops.admit)
    async def create(body: PlayRequest, client: Client) -> PlaySession:
        """`POST /v1/sessions` for a person: with recording on, a player name is required,
        and with `set` the seed is the set's next one for this player."""
        env = ops.info(body.env.value).name
        if body.set is not None and body.seed is not None:
            raise ServiceError(422, "invalid_request", "give a seed or a baseline set, not both")
        if recorder is None:
            if body.set is not None:
                raise ServiceError(404, "unknown_set", "this server has no baseline sets")
            return _created(ops.create(client, env, body.seed, None), None)
        player = recorder.player(client, body.player, body.set)
        ops.store.reserve(client)  # its session place, before anything touches the disk
        await recorder.open_run(player)
        try:
            seed = body.seed if player.baseline is None else await recorder.next_seed(player, env)
            session = ops.create(client, env, seed, None)  # no await: no race
        except BaseException:
            recorder.release_run(player)
            raise
        recorder.attach(session, player)  # the session now holds the run
        baseline = player.baseline.name if player.baseline else None
        return _created(session, Recording(run=player.run, player=player.name, set=baseline))

    @router.get("/play/api/progress", response_model=Progress)
    async def progress(
        client: Client,
        player: Annotated[str, Query(max_length=40)],
        set: Annotated[str | None, Query(max_length=40)] = None,
    ) -> Response:
        """The episodes recorded so far in a player's run (free play, or one set); an
        episode is recorded before the step that ended it answers."""
        await ops.reads.turn(client)
        if recorder is None:
            raise ServiceError(404, "not_recording", "this server does not record human runs")
        who = recorder.player(client, player, set)
        return Response(await recorder.progress(who), media_type="application/json")

    return router


def mount_play(app: FastAPI, recorder: HumanRecorder | None = None) -> FastAPI:
    """`app` (the service's, `textenvs.service.app.create_app`) with the play page at
    `/play/`; with a `recorder`, its finished episodes become eval runs, and the recorder
    writes what is due and closes when the server stops."""
    if recorder is not None:
        recorder.share_between(app.state.clients)  # its disk, as sessions are shared

        async def stop_recording() -> None:
            await recorder.settle()
            recorder.close()

        app.state.on_stop.append(stop_recording)
    app.include_router(play_router(app.state.ops, recorder))
    return app


def create_app(*, recorder: HumanRecorder | None = None, **options: Any) -> FastAPI:
    """The service app (`options` as `textenvs.service.app.create_app` takes them) with the
    play page mounted: what `textenvs serve` and `textenvs play --web` serve."""
    return mount_play(create_service_app(**options), recorder)
