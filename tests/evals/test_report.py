"""Reports: Markdown, self-contained HTML, transcripts, and the page in real Chromium."""

from __future__ import annotations

import asyncio
import csv
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path
from typing import Any

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
    # The band chart, success rates, and a steps histogram (0/1 returns get none).
    assert html.count("<svg") == 3
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
    assert f"{ENV}: expected success of the exploration" in rendered

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


def test_scores_against_bands_and_skills_are_reported(report: tuple[Path, Path, Path]) -> None:
    scripted, random, out = report
    md = (out / "report.md").read_text()
    for run in (load_run(scripted), load_run(random)):
        s = run.summary[ENV]
        row = f"| {ENV} | {run.path.name} | expected success of the exploration | "
        assert row + f"{s['headline']:.3f} |" in md
        assert f"{s['normalised']:.3f} |" in md
        assert f"| all | {run.path.name} | mean normalised score |" in md
    assert "| treasure-hunt | exploration (new tiles / steps) | 100.0% |" in md
    # No raw Python values anywhere in the tables.
    for raw in ("None", "True", "False", "{'"):
        assert raw not in md, raw


def test_csv_and_tex_exports(report: tuple[Path, Path, Path]) -> None:
    out = report[2]
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert [(r["run"], r["env"]) for r in rows] == [
        ("scripted", ENV), ("scripted", "all"), ("random", ENV), ("random", "all")
    ]  # fmt: skip
    for row in rows[::2]:
        s = load_run(out.parent / row["run"]).summary[ENV]
        assert float(row["success_rate"]) == pytest.approx(s["success_rate"])
        assert float(row["normalised"]) == pytest.approx(s["normalised"])
        assert float(row["skill_exploration"]) == pytest.approx(s["skills"]["exploration"])
        assert row["band_ceiling_kind"] == "exact" and row["version"] == row["band_version"]
    tex = (out / "results.tex").read_text()
    assert tex.count("\\begin{tabular}") == 1 and "treasure-hunt & scripted" in tex
    assert "95\\%" in tex and "\\bottomrule" in tex


def test_transcripts_navigate_and_pair_up(report: tuple[Path, Path, Path]) -> None:
    scripted, _, out = report
    first = (scripted / store.TRANSCRIPTS / f"{ENV}-0-0.html").read_text()
    middle = (scripted / store.TRANSCRIPTS / f"{ENV}-3-0.html").read_text()
    assert "previous" not in first and "next" in first
    for page, name in ((middle, f"{ENV}-3-0.html"), (first, f"{ENV}-0-0.html")):
        for href in re.findall(r"<nav>(.*?)</nav>", page)[0].split('href="')[1:]:
            target = (scripted / store.TRANSCRIPTS / href.split('"')[0]).resolve()
            assert target.is_file(), (name, href)
    assert f'href="{ENV}-2-0.html"' in middle and f'href="{ENV}-4-0.html"' in middle
    # The LLM-style per-turn line appears only when there is something to show.
    assert "prompt +" not in middle
    pairs = sorted((out / "side-by-side").glob("*.html"))
    assert len(pairs) == len(SEEDS)
    page = pairs[0].read_text()
    assert page.count('class="cmd"') >= 2 and "scripted" in page and "random" in page
    html = (out / "report.html").read_text()
    assert html.count('href="side-by-side/') == len(SEEDS)


def test_warnings_for_different_seeds_and_band_versions(
    report: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    from textenvs.evals.bands import version_warnings

    scripted = report[0]
    other = tmp_path / "few"
    plan = runner.EvalPlan(envs=[ENV], seeds=[0, 1])
    config = runner.build_config(
        plan, make_agent("random"), agent_options={}, prices=None, seeds_spec="0-1"
    )
    asyncio.run(runner.run_eval(plan, other, lambda: make_agent("random"), config))
    write_report([scripted, other], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Warnings" in md and "ran different seed sets (0-1 vs 0-11)" in md
    bands = {"scenarios": {ENV: {"version": "7"}}}
    (line,) = version_warnings(bands, "run", {ENV: "0"})
    assert "ran version 0" in line and "version 7" in line


def test_zero_scored_episodes_read_na(tmp_path: Path) -> None:
    run = tmp_path / "errors"
    plan = runner.EvalPlan(envs=[ENV], seeds=[0])
    config = runner.build_config(
        plan, make_agent("random"), agent_options={}, prices=None, seeds_spec="0"
    )

    def broken() -> Any:
        raise RuntimeError("no agent today")

    asyncio.run(runner.run_eval(plan, run, broken, config))
    write_report([run], run)
    md = (run / "report.md").read_text()
    assert f"| {ENV} | errors | 1 | 0/0 | n/a | n/a | n/a |" in md
    assert "0.0%-100.0%" not in md and "0.0% - 100.0%" not in md
