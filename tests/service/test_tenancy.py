"""Several clients on one service: private sessions, per-client limits (429 + Retry-After),
token files, and health that answers while every session slot is taken."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

import textenvs
from textenvs.cli import main as cli_main
from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread
from textenvs.service.tenancy import ClientLimits, CredentialError, read_token_file

ENV = textenvs.names()[0]
TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}


def auth(name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[name]}"}


def create(http: httpx.Client, who: str, seed: int = 0) -> httpx.Response:
    return http.post("/v1/sessions", json={"env": ENV, "seed": seed}, headers=auth(who))


def test_sessions_are_private_to_the_client_that_made_them() -> None:
    with (
        serve_in_thread(create_app(tokens=TOKENS)) as base,
        httpx.Client(base_url=base, timeout=10) as http,
    ):
        sid = create(http, "alice").json()["session_id"]
        step = {"command": "north"}
        for method, path, body in [
            ("GET", f"/v1/sessions/{sid}", None),
            ("POST", f"/v1/sessions/{sid}/step", step),
            ("POST", f"/v1/sessions/{sid}/reset", {}),
            ("DELETE", f"/v1/sessions/{sid}", None),
        ]:
            response = http.request(method, path, json=body, headers=auth("bob"))
            assert response.status_code == 404, (method, path)
            assert response.json()["error"]["code"] == "unknown_session"
        assert http.get(f"/v1/sessions/{sid}").status_code == 401  # no token at all
        # Bob's attempts changed nothing: alice's session has not stepped.
        view = http.get(f"/v1/sessions/{sid}", headers=auth("alice")).json()
        assert view["steps_used"] == 0
        assert http.post(f"/v1/sessions/{sid}/step", json=step, headers=auth("alice")).is_success
        assert http.delete(f"/v1/sessions/{sid}", headers=auth("alice")).status_code == 204


def test_open_session_limit_per_client_and_health_while_full() -> None:
    # Four sessions shared evenly by two clients: two each.
    with (
        serve_in_thread(create_app(tokens=TOKENS, max_sessions=4)) as base,
        httpx.Client(base_url=base, timeout=10) as http,
    ):
        alice = [create(http, "alice", i).json()["session_id"] for i in range(2)]
        refused = create(http, "alice")
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert refused.json()["error"]["code"] == "too_many_sessions"
        assert [create(http, "bob", i).status_code for i in range(2)] == [201, 201]
        health = http.get("/v1/health")  # the server is full; health still answers
        assert health.status_code == 200 and "sessions" not in health.json()
        mine = http.get("/v1/health", headers=auth("alice")).json()  # her own, no one else's
        assert (mine["sessions"], mine["max_sessions"]) == (2, 2)
        http.delete(f"/v1/sessions/{alice[0]}", headers=auth("alice"))
        assert create(http, "alice").status_code == 201


@pytest.mark.slow
def test_creation_and_step_rates_per_client() -> None:
    limits = ClientLimits(creates_per_minute=3, steps_per_second=5)
    with (
        serve_in_thread(create_app(tokens=TOKENS, limits=limits)) as base,
        httpx.Client(base_url=base, timeout=10) as http,
    ):
        statuses = [create(http, "alice", i).status_code for i in range(4)]
        assert statuses == [201, 201, 201, 429]
        refused = create(http, "alice")
        # 3 a minute: the next creation is about 20 s away.
        assert 1 <= int(refused.headers["retry-after"]) <= 21
        assert refused.json()["error"]["code"] == "rate_limited"
        sid = create(http, "bob").json()["session_id"]  # bob has his own budget
        started = time.monotonic()
        steps = [
            http.post(f"/v1/sessions/{sid}/step", json={"command": "wait"}, headers=auth("bob"))
            for _ in range(12)
        ]
        took = time.monotonic() - started
        # Over the rate, steps wait their turn (up to the patience) instead of being refused:
        # 5 at once, then 5 a second.
        assert [r.status_code for r in steps] == [200] * 12, [r.text for r in steps]
        assert took >= 1.2, f"12 steps at 5 a second took {took:.2f} s"
        view = http.get(f"/v1/sessions/{sid}", headers=auth("bob")).json()
        assert view["steps_used"] == 12


def test_token_file_parsing(tmp_path: Path) -> None:
    good = tmp_path / "tokens"
    good.write_text("# clients\nalice alice-token-0123456789\n\nbob   bob-token-0123456789ab\n")
    assert read_token_file(good) == TOKENS
    cases = {
        "alice\n": "expected 'name token'",
        "alice short\n": "under 16 characters",
        "a alice-token-0123456789\na bob-token-0123456789ab\n": "listed twice",
        "a alice-token-0123456789\nb alice-token-0123456789\n": "share a token",
        "# nothing\n": "no 'name token' lines",
    }
    for text, reason in cases.items():
        bad = tmp_path / "bad"
        bad.write_text(text)
        with pytest.raises(CredentialError, match=reason):
            read_token_file(bad)


def test_serve_rejects_bad_token_files_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "tokens"
    bad.write_text("alice short\n")
    assert cli_main(["serve", "--token-file", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("textenvs serve: error:") and "under 16" in err and "\n" not in err
    assert cli_main(["serve", "--token-file", str(tmp_path / "missing")]) == 2
    assert "cannot read token file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:  # argparse: usage, then the one error line
        cli_main(["serve", "--steps-per-second", "-1"])
    assert exited.value.code == 2
    assert "--steps-per-second: must be at least 0" in capsys.readouterr().err
