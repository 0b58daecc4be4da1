"""Readable transcripts: one self-contained HTML page per episode, from its trajectory,
with previous / next / back links and each turn's tokens and latency; and, when a report
compares runs, a side-by-side page of two runs on the same seed."""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textenvs.evals import store
from textenvs.evals.metrics import Key, Record, key_of

if TYPE_CHECKING:
    from textenvs.evals.report import Links, Run

SIDE_BY_SIDE = "side-by-side"

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:900px;padding:0 16px;color:#222}
body.wide{max-width:1500px}
pre{background:#f7f7f7;border:1px solid #e2e2e2;padding:8px;overflow-x:auto;font-size:12.5px}
.cmd{font:600 13px monospace;margin:4px 0 18px;color:#1a4f9c}.bad{color:#b00020}
.meta td{padding:1px 10px 1px 0}.turn{color:#777;font-size:12px}
nav{margin:0 0 12px;font-size:13px}nav a{margin-right:14px}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:16px}.cols>div{min-width:0}
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
    run_dir: Path, records: list[Record], back: str | None = None
) -> dict[Key, str]:
    """`DIR/transcripts/<env>-<seed>-<episode>.html` for each record whose trajectory
    exists, in key order with previous / next links and a link `back` to the report
    (relative to the transcripts folder); returns key -> path relative to `run_dir`."""
    out = run_dir / store.TRANSCRIPTS
    out.mkdir(exist_ok=True)
    pages: list[tuple[Key, Record]] = [
        (key_of(r), r) for r in sorted(records, key=key_of) if _load_ok(run_dir, r)
    ]
    names = [f"{store.stem(*key)}.html" for key, _ in pages]
    links: dict[Key, str] = {}
    for i, (key, record) in enumerate(pages):
        data = _load(run_dir, record)
        if data is None:
            continue
        nav = _nav(
            [
                ("← previous", names[i - 1] if i else None),
                ("next →", names[i + 1] if i + 1 < len(names) else None),
                ("back to the report", back),
            ]
        )
        store.write_atomic(out / names[i], render_transcript(data, nav))
        links[key] = f"{store.TRANSCRIPTS}/{names[i]}"
    return links


def _load_ok(run_dir: Path, record: Record) -> bool:
    return bool(record.get("trajectory")) and (run_dir / record["trajectory"]).is_file()


def write_side_by_side(out: Path, base: Run, other: Run, links: Links) -> dict[Key, str]:
    """`out/side-by-side/<env>-<seed>-<episode>-<run>.html`: the baseline and `other`
    on each (env, seed, episode) both played, in two columns; returns key -> path
    relative to `out`."""
    folder = out / SIDE_BY_SIDE
    by_key = {key_of(r): r for r in base.records}
    pages: dict[Key, str] = {}
    for record in sorted(other.records, key=key_of):
        key = key_of(record)
        if key not in by_key:
            continue
        pair = [(base, _load(base.path, by_key[key])), (other, _load(other.path, record))]
        if any(data is None for _, data in pair):
            continue
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{store.stem(*key)}-{_safe(other.label)}.html"
        columns = []
        for run, data in pair:
            assert data is not None
            page = links.get((run.label, *key))
            href = os.path.relpath(out / page, folder) if page else ""
            head = (
                f'<h2><a href="{escape(href)}">{escape(run.label)}</a></h2>'
                if href
                else (f"<h2>{escape(run.label)}</h2>")
            )
            columns.append(f"<div>{head}{_meta(data)}{_turns(data)}</div>")
        title = f"{key[0]} seed {key[1]}: {base.label} vs {other.label}"
        nav = _nav([("back to the report", "../report.html")])
        body = f"{nav}<h1>{escape(title)}</h1><div class='cols'>{''.join(columns)}</div>{nav}"
        store.write_atomic(folder / name, _page(title, body, wide=True))
        pages[key] = f"{SIDE_BY_SIDE}/{name}"
    return pages


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
