"""The play page in a real browser (Playwright driving the system's Chromium): a full
episode of every scenario, with an unreadable command, typed through the page; what the
page shows is what an agent reads, and the episode is recorded as an eval run.

Skips cleanly without Playwright (`pip install -e '.[browser]'`) or without a Chromium
(`apt-get install chromium`); Playwright's own browser download is never used.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import textenvs
from tests.web.conftest import PILOT_SEEDS, UNREADABLE, read_run, reference_episode

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = os.environ.get("TEXTENVS_CHROMIUM") or next(
    (p for name in ("chromium", "chromium-browser") if (p := shutil.which(name))), None
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium found (apt-get install chromium)"
)
ENV_NAMES = textenvs.names()
# Generous waits: the suite runs in parallel on small machines, and nothing here is timed.
sync_api.expect.set_options(timeout=30_000)
ENDINGS = {"success": "Success", "timeout": "Out of steps", "failure": "Episode over"}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        try:
            chromium = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
            )
        except sync_api.Error as exc:  # e.g. a Chromium too old for this Playwright
            pytest.skip(f"Chromium does not start under Playwright: {exc.message[:200]}")
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], errors


def start_set_episode(page: Any, url: str, env_name: str, player: str) -> int:
    page.goto(f"{url}/play/?env={env_name}")
    sync_api.expect(page.locator("#start")).to_be_enabled()  # the scenarios are loaded
    page.fill("#player", player)
    sync_api.expect(page.locator("#set")).to_have_value("pilot")
    page.click("#start")
    sync_api.expect(page.locator("#game")).to_be_visible()
    title = page.locator("#game-title").text_content()
    return int(title.rsplit("seed ", 1)[1])


def send(page: Any, command: str, step: int) -> None:
    page.fill("#command", command)
    page.press("#command", "Enter")
    sync_api.expect(page.locator("#counters")).to_contain_text(f"Step {step} of")


@pytest.mark.slow
@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_a_full_episode_through_the_page(
    page: Any, url: str, record_dir: Path, env_name: str, tmp_path: Path
) -> None:
    player = f"web-{env_name}"
    seed = start_set_episode(page, url, env_name, player)
    assert seed == PILOT_SEEDS[0]
    reference = reference_episode(env_name, seed)
    observation = page.locator("#observation")
    assert observation.text_content() == reference.turns[0].observation
    sync_api.expect(page.locator("#command")).to_be_focused()
    valid = page.locator("#valid button").all_text_contents()
    assert len(valid) >= 4 and all(v.strip() for v in valid)

    for number, turn in enumerate(reference.turns, 1):
        if number > 1:
            assert observation.text_content() == turn.observation
        send(page, turn.command, number)
        if turn.command == UNREADABLE:
            sync_api.expect(page.locator("#notice")).to_contain_text("Not read, turn wasted")
            sync_api.expect(page.locator("#counters")).to_contain_text("1 wasted")
        if number < len(reference.turns):
            sync_api.expect(page.locator("#command")).to_be_focused()
    assert observation.text_content() == reference.final_observation

    sync_api.expect(page.locator("#end")).to_be_visible()
    sync_api.expect(page.locator("#end-title")).to_have_text(ENDINGS[reference.outcome])
    sync_api.expect(page.locator("#command")).to_be_disabled()
    sync_api.expect(page.locator("#recorded")).to_contain_text(f"Recorded in run pilot-{player}")
    page.screenshot(path=str(tmp_path / f"{env_name}-end.png"), full_page=True)

    config, [record] = read_run(record_dir / f"pilot-{player}")
    assert config["agent"]["name"] == "human" and config["agent"]["player"] == player
    assert (record["env"], record["seed"], record["outcome"]) == (env_name, seed, reference.outcome)
    assert record["invalid_actions"] == reference.invalid_actions >= 1
    assert record["return"] == pytest.approx(reference.total_reward)

    # The next seed of the set comes with one key press (focus is on that button).
    page.keyboard.press("Enter")
    sync_api.expect(page.locator("#game-title")).to_contain_text(f"seed {PILOT_SEEDS[1]}")


def test_keyboard_history_rules_and_help(page: Any, url: str) -> None:
    start_set_episode(page, url, "treasure-hunt", "keys")
    send(page, "north", 1)
    send(page, "east", 2)
    command = page.locator("#command")
    command.press("ArrowUp")
    sync_api.expect(command).to_have_value("east")
    command.press("ArrowUp")
    sync_api.expect(command).to_have_value("north")
    command.press("ArrowDown")
    sync_api.expect(command).to_have_value("east")
    command.press("ArrowDown")
    sync_api.expect(command).to_have_value("")
    # `help` opens the rules without spending a turn.
    command.fill("help")
    command.press("Enter")
    sync_api.expect(page.locator("#rules")).to_have_attribute("open", "")
    sync_api.expect(page.locator("#rules-text")).to_contain_text("Action:")
    sync_api.expect(page.locator("#counters")).to_contain_text("Step 2 of")
    sync_api.expect(command).to_be_focused()
    # A valid-command button fills the input and gives the focus back to it.
    page.locator("#valid button", has_text="west").click()
    sync_api.expect(command).to_have_value("west")
    sync_api.expect(command).to_be_focused()
    # A reload resumes the running episode.
    page.reload()
    sync_api.expect(page.locator("#counters")).to_contain_text("Step 2 of")
    sync_api.expect(page.locator("#notice")).to_have_text("Resumed your episode.")


@pytest.mark.parametrize(
    ("label", "width", "height"), [("phone", 390, 844), ("zoom-200", 640, 450)]
)
def test_small_screens_and_200_percent_zoom(
    browser: Any, url: str, label: str, width: int, height: int, tmp_path: Path
) -> None:
    """At phone width, and at 200% zoom of a 1280x900 window (640x450 CSS pixels), the
    page does not scroll sideways and the command line stays on screen under a long
    observation (Megacity's)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    try:
        start_set_episode(page, url, "megacity", f"small-{label}")
        send(page, "scan", 1)
        layout = page.evaluate(
            "() => ({scroll: document.documentElement.scrollWidth, width: innerWidth,"
            " input: document.querySelector('#command').getBoundingClientRect().bottom,"
            " font: parseFloat(getComputedStyle(document.querySelector('#observation')).fontSize)})"
        )
        assert layout["scroll"] <= layout["width"], layout
        assert 0 < layout["input"] <= height, layout
        assert layout["font"] >= 12, layout
        page.screenshot(path=str(tmp_path / f"{label}.png"))
    finally:
        context.close()


@pytest.mark.slow
def test_a_token_protected_server_asks_for_the_token(browser: Any) -> None:
    from textenvs.play.page import create_app
    from textenvs.service.background import serve_in_thread

    token = "page-token-0123456789"
    with serve_in_thread(create_app(token=token)) as url:
        context = browser.new_context()
        page = context.new_page()
        try:
            page.goto(f"{url}/play/?env=em-anomaly&seed=2")
            sync_api.expect(page.locator("#alert")).to_have_text(
                "This server needs an access token."
            )
            page.fill("#token", "wrong-token-0123456789")
            page.click("#start")
            sync_api.expect(page.locator("#alert")).to_have_text("That token was not accepted.")
            page.fill("#token", token)
            page.click("#start")  # loads the scenarios with the token
            sync_api.expect(page.locator("#env")).to_have_value("em-anomaly")
            sync_api.expect(page.locator("#player-field")).to_be_hidden()  # not recording
            page.click("#start")
            sync_api.expect(page.locator("#game-title")).to_contain_text("seed 2")
            send(page, "north", 1)
        finally:
            context.close()


@pytest.mark.slow
def test_a_finished_set_sends_the_player_back_to_choosing(page: Any, url: str) -> None:
    for number, seed in enumerate(PILOT_SEEDS):
        if number == 0:
            assert start_set_episode(page, url, "treasure-hunt", "finisher") == seed
        else:
            page.click("#again")
            sync_api.expect(page.locator("#game-title")).to_contain_text(f"seed {seed}")
        for step in range(1, 31):
            if page.locator("#end").is_visible():
                break
            send(page, "wait", step)
        sync_api.expect(page.locator("#end")).to_be_visible()
    page.click("#again")
    sync_api.expect(page.locator("#alert")).to_contain_text("has played every seed of set")
    sync_api.expect(page.locator("#setup")).to_be_visible()
    sync_api.expect(page.locator("#progress")).to_contain_text("2 of 2 seeds of set pilot")
