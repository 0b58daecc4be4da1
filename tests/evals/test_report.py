"""Reports: Markdown, self-contained HTML, transcripts, and the page in real Chromium."""

from __future__ import annotations

import asyncio
import csv
import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from textenvs.agents import make_agent
from textenvs.evals import run_folder, runner, store
from textenvs.evals.metrics import compare
from textenvs.evals.plan import EvalPlan, build_config
from textenvs.evals.report import default_out, write_report
from textenvs.evals.report_data import load_run
from textenvs.evals.transcript import TRANSCRIPTS

ENV = "treasure-hunt"
SEEDS = list(range(12))


def make_run(path: Path, agent: str) -> None:
    plan = EvalPlan(envs=[ENV], seeds=SEEDS)
    config = build_config(
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
    assert md.count("(transcripts/scripted/") == len(SEEDS)


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
    links = re.findall(r'href="(transcripts/[^"]+)"', html)
    assert len(links) == 2 * len(SEEDS)
    for link in links:
        assert (out / link).resolve().is_file()
    page = (out / TRANSCRIPTS / "scripted" / f"{ENV}-3-0.html").read_text()
    turns = load_run(scripted).records
    steps = next(r["steps"] for r in turns if r["seed"] == 3)
    assert page.count('class="cmd"') == steps


def test_a_report_writes_only_into_its_own_folder(
    report: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted = report[0]

    def files(folder: Path) -> dict[Path, bytes]:
        return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    before = files(scripted)
    monkeypatch.chdir(tmp_path)
    out = default_out([scripted])
    assert out == Path("reports/scripted")
    write_report([scripted], out)
    assert files(scripted) == before
    md = (out / "report.md").read_text()
    assert "](transcripts/scripted/treasure-hunt-0-0.html)" in md
    assert "Paired comparison" not in md
    with pytest.raises(store.RunDirError, match="run folder"):
        write_report([scripted], scripted)


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
@pytest.mark.slow
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

        def with_ci(value: float, lo: float, hi: float) -> str:  # a point interval: bare
            return f"{value:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo < hi else "")

        assert row + with_ci(s["headline"], *s["headline_ci95"]) + " |" in md
        assert with_ci(s["normalised"], *s["normalised_ci95"]) + " |" in md
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
    _, _, out = report
    folder = out / TRANSCRIPTS / "scripted"
    first = (folder / f"{ENV}-0-0.html").read_text()
    middle = (folder / f"{ENV}-3-0.html").read_text()
    assert "previous" not in first and "next" in first
    for page, name in ((middle, f"{ENV}-3-0.html"), (first, f"{ENV}-0-0.html")):
        for href in re.findall(r"<nav>(.*?)</nav>", page)[0].split('href="')[1:]:
            target = (folder / href.split('"')[0]).resolve()
            assert target.is_file(), (name, href)
    assert f'href="{ENV}-2-0.html"' in middle and f'href="{ENV}-4-0.html"' in middle
    # The LLM-style per-turn line appears only when there is something to show.
    assert "prompt +" not in middle
    pairs = sorted((out / "side-by-side").glob("*.html"))
    assert len(pairs) == len(SEEDS)
    page = pairs[0].read_text()
    # Two frames showing the runs' own transcript pages; the page repeats none of it.
    frames = re.findall(r'<iframe src="([^"]+)"', page)
    assert [Path(f).parent.name for f in frames] == ["scripted", "random"]
    assert all((pairs[0].parent / f).resolve().is_file() for f in frames)
    assert 'class="cmd"' not in page and len(page) < 2_000
    html = (out / "report.html").read_text()
    assert html.count('href="side-by-side/') == len(SEEDS)


def test_figures_are_written_as_svg_and_pdf(report: tuple[Path, Path, Path]) -> None:
    import xml.etree.ElementTree as ET

    pypdf = pytest.importorskip("pypdf")
    figures = report[2] / "figures"
    names = sorted(p.stem for p in figures.glob("*.svg"))
    # The band chart, success rates and the steps histogram, as on the page.
    assert names == [f"scores-{ENV}", f"steps-{ENV}", "success"]
    for name in names:
        svg = ET.parse(figures / f"{name}.svg").getroot()
        assert svg.find("{http://www.w3.org/2000/svg}style") is not None  # styled alone
        title = svg.find("{http://www.w3.org/2000/svg}text").text
        pdf = pypdf.PdfReader(figures / f"{name}.pdf", strict=True)
        (page,) = pdf.pages
        assert float(page.mediabox.width) == float(svg.get("width"))
        assert title in page.extract_text()


def test_no_token_or_cost_columns_for_agents_without_tokens(
    report: tuple[Path, Path, Path],
) -> None:
    md = (report[2] / "report.md").read_text()  # both runs were given prices
    for column in ("tokens/ep", "cost/ep", "cacheable", "| tokens |"):
        assert column not in md, column
    rows = list(csv.DictReader((report[2] / "results.csv").open()))
    assert all(row["tokens_per_episode"] == "" for row in rows)
    # The results table `eval` prints leaves them out as well.
    from rich.console import Console

    from textenvs.cli.eval_output import results_table

    console = Console(record=True, width=200)
    summary = json.loads((report[0] / run_folder.SUMMARY).read_text())
    console.print(results_table(summary, "scripted"))
    text = console.export_text()
    assert "score" in text and "$/ep" not in text and "tokens/ep" not in text


def test_bootstrap_intervals_are_deterministic_and_hold_the_score(
    report: tuple[Path, Path, Path],
) -> None:
    scripted, random, out = report
    for path in (scripted, random):
        first, again = load_run(path).summary, load_run(path).summary
        for env in (ENV, "all"):
            lo, hi = first[env]["normalised_ci95"]
            assert again[env]["normalised_ci95"] == [lo, hi]
            assert (
                0 <= lo <= first[env]["normalised"] + 1e-9
                and first[env]["normalised"] <= hi + 1e-9 <= 1 + 1e-9
            )
    rows = list(csv.DictReader((out / "results.csv").open()))
    random_all = next(r for r in rows if r["run"] == "random" and r["env"] == "all")
    assert float(random_all["normalised_ci95_hi"]) > float(random_all["normalised_ci95_lo"])
    tex = (out / "results.tex").read_text()
    assert "Headline metric" in tex and "expected success of the exploration" in tex


def test_warnings_for_different_seeds_and_band_versions(
    report: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    from textenvs.evals.bands import band_warnings

    scripted = report[0]
    other = tmp_path / "few"
    plan = EvalPlan(envs=[ENV], seeds=[0, 1])
    config = build_config(
        plan, make_agent("random"), agent_options={}, prices=None, seeds_spec="0-1"
    )
    asyncio.run(runner.run_eval(plan, other, lambda: make_agent("random"), config))
    write_report([scripted, other], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Warnings" in md and "ran different seed sets (0-1 vs 0-11)" in md
    bands = {"scenarios": {ENV: {"version": "7"}}}
    (line,) = band_warnings(bands, "run", {ENV: "0"})
    assert "ran version 0" in line and "version 7" in line
    (line,) = band_warnings({"scenarios": {}}, "run", {ENV: "0"})
    assert line == f"run: no reference band for {ENV}"


def test_zero_scored_episodes_read_na(tmp_path: Path) -> None:
    run = tmp_path / "errors"
    plan = EvalPlan(envs=[ENV], seeds=[0])
    config = build_config(plan, make_agent("random"), agent_options={}, prices=None, seeds_spec="0")

    def broken() -> Any:
        raise RuntimeError("no agent today")

    asyncio.run(runner.run_eval(plan, run, broken, config))
    write_report([run], tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    assert f"| {ENV} | errors | 1 | 0/0 | n/a | n/a | n/a |" in md
    assert "0.0%-100.0%" not in md and "0.0% - 100.0%" not in md


def test_histogram_bins_are_labelled_by_their_ranges() -> None:
    from textenvs.evals import plots

    def labels(values: list[float]) -> list[str]:
        svg = plots.histogram("h", [plots.Series("run", "#000")], [values])
        return re.findall(r'text-anchor="middle">([^<]+)</text>', svg)

    # Steps 12-41: 15 bins of two whole numbers; thinned, but the last bin is labelled.
    steps = labels([float(v) for v in range(12, 42)])
    assert steps[0] == "12-13" and steps[-1] == "40-41"
    assert labels([3.0, 4.0, 5.0]) == ["3", "4", "5"]  # bins of one number
    returns = labels([0.05, 0.3, 0.55, 0.98])
    assert all("–" in label for label in returns)  # ranges, not left edges
    low, high = returns[-1].split("–")
    assert float(low) < 0.98 <= float(high)
    # negative bins read as ranges, not as one more minus sign
    negative = labels([-950.0, -850.5, -120.25, 10.5])
    assert "-1000 to -900" in negative and "–-" not in "".join(negative)
    assert labels([-3.0, -2.0, -1.0]) == ["-3", "-2", "-1"]


def test_a_damaged_run_is_reported_with_warnings(
    report: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from textenvs.cli import main

    run = tmp_path / "damaged"
    shutil.copytree(report[1], run)
    (run / "trajectories" / "treasure-hunt-3-0.json").unlink()
    with open(run / "episodes.jsonl", "ab") as log:
        log.write(b'{"env": "treasure-hunt", "se')  # a write cut short
    assert main(["report", str(run), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"textenvs report: warning: {run}/episodes.jsonl ends in a torn line (a write cut "
        "short): that episode is left out; rerun the run's eval command with --resume to "
        "repair it and play that episode",
        f"textenvs report: warning: {run}: 1 episode(s) have no trajectory file (the first "
        "trajectories/treasure-hunt-3-0.json): they are counted, but have no transcript page",
    ]


def test_a_report_never_writes_into_any_run(report: tuple[Path, Path, Path]) -> None:
    scripted, random, _ = report
    for out in (random, random / "trajectories", random / "new" / "deeper"):
        with pytest.raises(store.RunDirError, match="eval run folder; give the report"):
            write_report([scripted], out)
    assert not (random / "new").exists()
