"""Reports: Markdown, self-contained HTML, transcripts, and the page in real Chromium."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest

from textenvs.agents import make_agent
from textenvs.evals import runner, store
from textenvs.evals.metrics import compare
from textenvs.evals.report import load_run, write_report

ENV = "treasure-hunt"
SEEDS = list(range(12))


def make_run(path: Path, agent: str) -> None:
    plan = runner.EvalPlan(envs=[ENV], seeds=SEEDS)
    config = runner.build_config(
        plan,
        make_agent(agent),
        agent_options={},
        prices={"prompt_per_1k": 1.0, "completion_per_1k": 2.0},
        seeds_spec="0-11",
    )
    asyncio.run(runner.run_eval(plan, path, lambda: make_agent(agent), config))


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("report")
    make_run(root / "scripted", "scripted")
    make_run(root / "random", "random")
    out = root / "compare"
    write_report([root / "scripted", root / "random"], out)
    return root / "scripted", root / "random", out


def key_figures(scripted: Path, random: Path) -> list[str]:
    """Numbers a reader needs, formatted as the report formats them."""
    figures = []
    for run in (load_run(scripted), load_run(random)):
        s = run.summary[ENV]
        lo, hi = s["success_ci95"]
        figures += [
            f"{s['successes']}/{s['scored_episodes']}",
            f"{s['success_rate']:.1%}",
            f"{lo:.1%} - {hi:.1%}",
            f"{s['mean_return']:.3f} ± {s['return_stderr']:.3f}",
            f"{s['mean_steps']:.1f}",
        ]
    c = compare(load_run(scripted).records, load_run(random).records)
    figures += [f"{c['success_p']:.3g}", f"{c['success_diff'] * 100:+.1f} pp"]
    return figures


def test_markdown_and_html_hold_the_figures(report: tuple[Path, Path, Path]) -> None:
    scripted, random, out = report
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    text = unescape(re.sub(r"<[^>]+>", " ", html))
    for figure in key_figures(scripted, random):
        assert figure in md, figure
        assert figure in text, figure
    assert "Paired comparison against scripted" in md
    assert md.count("(../scripted/transcripts/") == len(SEEDS)


def test_html_is_self_contained(report: tuple[Path, Path, Path]) -> None:
    html = (report[2] / "report.html").read_text()
    assert html.count("<svg") == 3  # success + return and steps for one env
    assert not re.search(r"<link|<img|src=|@import|url\(", html)
    # The only absolute URL is the SVG namespace name, which is never fetched.
    assert set(re.findall(r"https?://[^\s\"']+", html)) == {"http://www.w3.org/2000/svg"}


def test_every_episode_links_to_its_transcript(report: tuple[Path, Path, Path]) -> None:
    scripted, _, out = report
    html = (out / "report.html").read_text()
    links = re.findall(r'href="([^"]+/transcripts/[^"]+)"', html)
    assert len(links) == 2 * len(SEEDS)
    for link in links:
        assert (out / link).resolve().is_file()
    page = (scripted / store.TRANSCRIPTS / f"{ENV}-3-0.html").read_text()
    turns = load_run(scripted).records
    steps = next(r["steps"] for r in turns if r["seed"] == 3)
    assert page.count('class="cmd"') == steps


def test_single_run_report_goes_into_the_run(report: tuple[Path, Path, Path]) -> None:
    scripted = report[0]
    write_report([scripted], scripted)
    md = (scripted / "report.md").read_text()
    assert "](transcripts/treasure-hunt-0-0.html)" in md
    assert "Paired comparison" not in md


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1200,1800",
]


@pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_report_renders_in_headless_chromium(
    report: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    scripted, random, out = report
    url = (out / "report.html").resolve().as_uri()
    base = [chromium(), *CHROMIUM_FLAGS]
    dom = subprocess.run(
        [*base, f"--user-data-dir={tmp_path / 'profile-dom'}", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = unescape(re.sub(r"<[^>]+>", " ", dom.stdout))
    for figure in key_figures(scripted, random):
        assert figure in rendered, figure
    assert dom.stdout.count("<svg") == 3 and "Success rate (95% Wilson CI)" in rendered

    shot = tmp_path / "report.png"
    done = subprocess.run(
        [*base, f"--user-data-dir={tmp_path / 'profile-shot'}", f"--screenshot={shot}", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
