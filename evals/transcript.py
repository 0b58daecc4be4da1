"""Readable transcripts: one self-contained HTML page per episode, from its trajectory,
with previous / next / back links and each turn's tokens and latency; and, when a report
compares runs, a side-by-side page of two runs on the same seed."""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from typing import Any

from textenvs.evals import store
from textenvs.evals.metrics import Key, Record, key_of
from textenvs.evals.report_data import Links, Run

TRANSCRIPTS = "transcripts"  # in a report folder: a subfolder per run
SIDE_BY_SIDE = "side-by-side"

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:900px;padding:0 16px;color:#222}
body.wide{max-width:1500px}
pre{background:#f7f7f7;border:1px solid #e2e2e2;padding:8px;overflow-x:auto;font-size:12.5px}
.cmd{font:600 13px monospace;margin:4px 0 18px;color:#1a4f9c}.bad{color:#b00020}
.meta td{padding:1px 10px 1px 0}.turn{color:#777;font-size:12px}
nav{margin:0 0 12px;font-size:13px}nav a{margin-right:14px}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:16px}.cols>div{min-width:0}
.cols iframe{width:100%;height:85vh;border:1px solid #e2e2e2}
"""


def _usage(usage: dict[str, Any] | None) -> str:
    usage = usage or {}
    prompt = usage.get("prompt_tokens", usage.get("prompt"))
    completion = usage.get("completion_tokens", usage.get("completion"))
    if prompt is None and completion is None:
        return ""
    return f"{prompt or 0} prompt + {completion or 0} completion tokens"


def _meta(data: dict[str, Any]) -> str:
    meta = {
        "outcome": data["outcome"],
        "success": "yes" if data["success"] else "no",
        "return": f"{data['total_reward']:g}",
        "steps": data["steps"],
        "invalid commands": data["invalid_actions"],
        "re-asks": data.get("reasks", 0),
        "model": data.get("model"),
        "tokens": _usage(data.get("usage")) or None,
        "model latency": f"{data['latency_s']:.2f} s" if data.get("latency_s") else None,
        "error": data.get("error"),
    }
    rows = "".join(
        f"<tr><td>{escape(k)}</td><td>{escape(str(v))}</td></tr>"
        for k, v in meta.items()
        if v is not None
    )
    return f"<table class='meta'>{rows}</table>"


def _turns(data: dict[str, Any]) -> str:
    parts = []
    for turn in data.get("turns", []):
        notes = []
        if turn.get("reward"):
            notes.append(f"reward {turn['reward']:+g}")
        if turn.get("invalid_action"):
            notes.append(f'<span class="bad">invalid: {escape(str(turn.get("error")))}</span>')
        elif turn.get("read_as") and turn["read_as"] != turn["command"]:
            notes.append(f"read as: {escape(turn['read_as'])}")
        if turn.get("reasks"):
            notes.append(f"{turn['reasks']} re-asks")
        cost = [_usage(turn.get("usage"))]
        if turn.get("latency_s"):
            cost.append(f"{turn['latency_s']:.2f} s")
        cost_text = " · ".join(c for c in cost if c)
        raw = turn.get("raw")
        parts.append(
            f'<div class="turn">step {turn["step"]}'
            + (f" · {escape(cost_text)}" if cost_text else "")
            + f"</div><pre>{escape(turn['observation'])}</pre>"
            + (
                f"<details><summary>model reply</summary><pre>{escape(raw)}</pre></details>"
                if raw and raw != turn["command"]
                else ""
            )
            + f'<div class="cmd">&gt; {escape(turn["command"])} {" | ".join(notes)}</div>'
        )
    parts.append(
        f"<h2>Final observation</h2><pre>{escape(data.get('final_observation', ''))}</pre>"
    )
    return "".join(parts)


def _page(title: str, body: str, *, wide: bool = False) -> str:
    cls = ' class="wide"' if wide else ""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{CSS}</style></head><body{cls}>{body}</body></html>\n"
    )


def _nav(links: list[tuple[str, str | None]]) -> str:
    items = [f'<a href="{escape(href)}">{escape(text)}</a>' for text, href in links if href]
    return f"<nav>{''.join(items)}</nav>"


def render_transcript(data: dict[str, Any], nav: str = "") -> str:
    """A trajectory (EpisodeResult.to_dict() plus key) as an HTML page."""
    title = f"{data['env']} seed {data['seed']} - {data['agent']}"
    return _page(title, f"{nav}<h1>{escape(title)}</h1>{_meta(data)}{_turns(data)}{nav}")


def _load(run_dir: Path, record: Record) -> dict[str, Any] | None:
    source = run_dir / record.get("trajectory", "")
    if not record.get("trajectory") or not source.is_file():
        return None
    return json.loads(source.read_text(encoding="utf-8"))


def write_transcripts(
    run_dir: Path, records: list[Record], folder: Path, back: str | None = None
) -> dict[Key, Path]:
    """`folder/<env>-<seed>-<episode>.html` for each record of the run in `run_dir` whose
    trajectory exists, in key order with previous / next links and a link `back` to the
    report (relative to `folder`); returns key -> page."""
    folder.mkdir(parents=True, exist_ok=True)
    pages: list[tuple[Key, dict[str, Any]]] = []
    for record in sorted(records, key=key_of):
        data = _load(run_dir, record)
        if data is not None:
            pages.append((key_of(record), data))
    names = [f"{store.stem(*key)}.html" for key, _ in pages]
    links: dict[Key, Path] = {}
    for i, (key, data) in enumerate(pages):
        nav = _nav(
            [
                ("← previous", names[i - 1] if i else None),
                ("next →", names[i + 1] if i + 1 < len(names) else None),
                ("back to the report", back),
            ]
        )
        # Pages a report can always write again: no fsync (a thousand of them cost seconds).
        (folder / names[i]).write_text(render_transcript(data, nav), encoding="utf-8")
        links[key] = folder / names[i]
    return links


def write_side_by_side(out: Path, base: Run, other: Run, links: Links) -> dict[Key, str]:
    """`out/side-by-side/<env>-<seed>-<episode>-<run>.html`: the transcript pages of the
    baseline and `other` on each (env, seed, episode) both have one, in two frames (the
    page only points at them, so it repeats nothing); returns key -> path relative to
    `out`."""
    folder = out / SIDE_BY_SIDE
    pages: dict[Key, str] = {}
    for record in sorted(other.records, key=key_of):
        key = key_of(record)
        pair = [(run, links.get((run.label, *key))) for run in (base, other)]
        if any(page is None for _, page in pair):
            continue
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{store.stem(*key)}-{safe_name(other.label)}.html"
        frames = []
        for run, page in pair:
            href = escape(os.path.relpath(out / str(page), folder))
            frames.append(
                f'<div><h2><a href="{href}">{escape(run.label)}</a></h2>'
                f'<iframe src="{href}" title="{escape(run.label)}"></iframe></div>'
            )
        title = f"{key[0]} seed {key[1]}: {base.label} vs {other.label}"
        nav = _nav([("back to the report", "../report.html")])
        body = f"{nav}<h1>{escape(title)}</h1><div class='cols'>{''.join(frames)}</div>"
        (folder / name).write_text(_page(title, body, wide=True), encoding="utf-8")
        pages[key] = f"{SIDE_BY_SIDE}/{name}"
    return pages


def safe_name(label: str) -> str:
    """A run label as a file or folder name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
