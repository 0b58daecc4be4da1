"""The input contract: non-finite and out-of-range numbers, strict seeds, the step body,
`Allow` headers, the Host allow-list and the published schema; fuzzed with Hypothesis."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import textenvs
from tests.service import SHARED_SERVER_LIMITS
from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread

ENV_NAMES = textenvs.names()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve_in_thread(
        create_app(max_sessions=100, idle_timeout=30, limits=SHARED_SERVER_LIMITS)
    ) as base:
        yield base


def post_raw(http: httpx.Client, path: str, body: str) -> httpx.Response:
    return http.post(path, content=body, headers={"Content-Type": "application/json"})


@pytest.mark.parametrize("number", ["Infinity", "-Infinity", "NaN", "1e400", "1" + "0" * 40])
def test_non_finite_or_huge_numbers_are_422_and_the_connection_lives(
    http: httpx.Client, number: str
) -> None:
    body = '{"env": "magnetic-field", "options": {"level": NUMBER}}'.replace("NUMBER", number)
    response = post_raw(http, "/v1/sessions", body)
    assert response.status_code == 422, response.text
    message = response.json()["error"]["details"][0]["msg"]
    assert "level" in message and ("finite" in message or "range" in message)
    # The same keep-alive connection goes on serving.
    assert [http.get("/v1/health").status_code for _ in range(10)] == [200] * 10


def test_option_errors_raised_by_the_env_are_422(http: httpx.Client) -> None:
    # Whatever the scenario's own validation raises (ValueError, TypeError, ...) is a 422.
    for options in ({"level": 10**9}, {"level": "high"}, {"nonsense": [1, 2]}):
        for env in ENV_NAMES:
            response = http.post("/v1/sessions", json={"env": env, "options": options})
            assert response.status_code in (201, 422), (env, options, response.text)
            if response.status_code == 201:
                http.delete(f"/v1/sessions/{response.json()['session_id']}")


@pytest.mark.parametrize("seed", ["7", True, 7.0, -1, 2**63, None])
def test_seeds_are_strict_integers(http: httpx.Client, seed: object) -> None:
    response = http.post("/v1/sessions", json={"env": ENV_NAMES[0], "seed": seed})
    if seed is None:  # omitted or null: the server picks one
        assert response.status_code == 201
        http.delete(f"/v1/sessions/{response.json()['session_id']}")
    else:
        assert response.status_code == 422, response.text


def test_step_body_needs_exactly_one_field(http: httpx.Client) -> None:
    sid = http.post("/v1/sessions", json={"env": ENV_NAMES[0]}).json()["session_id"]
    for body in ({}, {"command": None}, {"action": None}, {"command": "n", "action": {}}):
        assert http.post(f"/v1/sessions/{sid}/step", json=body).status_code == 422, body
    assert http.get(f"/v1/sessions/{sid}").json()["steps_used"] == 0
    http.delete(f"/v1/sessions/{sid}")


def test_405_names_every_method_of_the_path(http: httpx.Client) -> None:
    response = http.put("/v1/sessions/" + "A" * 32)
    assert response.status_code == 405
    assert {m.strip() for m in response.headers["allow"].split(",")} >= {"GET", "DELETE"}
    assert "POST" in http.get("/v1/sessions").headers["allow"]


def test_schema_states_the_contract(http: httpx.Client) -> None:
    schemas = http.get("/openapi.json").json()["components"]["schemas"]
    text = json.dumps(schemas)
    assert "9223372036854775807" in text and "9.2233" not in text
    assert set(schemas["EnvName"]["enum"]) >= set(ENV_NAMES)
    step = schemas["StepRequest"]
    assert step["minProperties"] == 1 and step["maxProperties"] == 1


def test_host_allow_list_without_token(url: str) -> None:
    port = url.rsplit(":", 1)[1]
    for host, status in [
        (f"127.0.0.1:{port}", 200),
        (f"localhost:{port}", 200),
        (f"[::1]:{port}", 200),
        ("rebind.attacker.example", 400),
        (f"rebind.attacker.example:{port}", 400),
    ]:
        response = httpx.get(f"{url}/v1/envs", headers={"Host": host})
        assert response.status_code == status, host
    assert response.json()["error"]["code"] == "bad_host"
    app = create_app(allowed_hosts=["envs.internal"])
    with serve_in_thread(app) as other:
        assert httpx.get(f"{other}/v1/envs", headers={"Host": "envs.internal"}).is_success
    # With a token, the token protects the server: any Host is served.
    with serve_in_thread(create_app(token="a-token-of-16-chars")) as other:
        assert httpx.get(f"{other}/v1/health", headers={"Host": "x.example"}).is_success


json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(
    env=st.sampled_from(ENV_NAMES),
    options=st.dictionaries(st.sampled_from(["level", "size", "x", "seed"]), json_values),
    seed=json_values,
    command=st.text(max_size=200),
    action=st.dictionaries(st.text(max_size=10), json_values, max_size=3),
)
@pytest.mark.slow
def test_fuzzed_options_and_commands_never_crash_the_server(
    url: str, env: str, options: dict, seed: object, command: str, action: dict
) -> None:
    with httpx.Client(base_url=url, timeout=10) as http:
        body = json.dumps({"env": env, "seed": seed, "options": options}, allow_nan=True)
        created = post_raw(http, "/v1/sessions", body)
        assert created.status_code in (201, 422), created.text
        finite = not any(isinstance(v, float) and not math.isfinite(v) for v in options.values())
        if created.status_code != 201:
            return
        assert finite or not options
        sid = created.json()["session_id"]
        for step in ({"command": command}, {"action": action}):
            response = post_raw(http, f"/v1/sessions/{sid}/step", json.dumps(step))
            assert response.status_code in (200, 409, 422), response.text
        assert http.delete(f"/v1/sessions/{sid}").status_code == 204
