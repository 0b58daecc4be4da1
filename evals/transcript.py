"""Readable transcripts: one self-contained HTML page per episode, from its trajectory."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from textenvs.evals import store
from textenvs.evals.metrics import Key, Record, key_of

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:900px;padding:0 16px;color:#222}
pre{background:#f7f7f7;border:1px solid #e2e2e2;padding:8px;overflow-x:auto;font-size:12.5px}
.cmd{font:600 13px monospace;margin:4px 0 18px;color:#1a4f9c}.bad{color:#b00020}
.meta td{padding:1px 10px 1px 0}.turn{color:#777;font-size:12px}
"""


def render_transcript(data: dict[str, Any]) -> str:
    """A trajectory (EpisodeResult.to_dict() plus key) as an HTML page."""
    title = f"{data['env']} seed {data['seed']} - {data['agent']}"
    meta = {
        "outcome": data["outcome"],
        "success": data["success"],
        "return": data["total_reward"],
        "steps": data["steps"],
        "invalid commands": data["invalid_actions"],
        "re-asks": data.get("reasks", 0),
        "model": data.get("model"),
        "tokens": data.get("usage") or {},
        "error": data.get("error"),
    }
    rows = "".join(
        f"<tr><td>{escape(k)}</td><td>{escape(str(v))}</td></tr>"
        for k, v in meta.items()
        if v not in (None, {})
    )
    parts = [f"<h1>{escape(title)}</h1><table class='meta'>{rows}</table>"]
    for turn in data.get("turns", []):
        notes = []
        if turn.get("reward"):
            notes.append(f"reward {turn['reward']:+g}")
        if turn.get("invalid_action"):
            notes.append(f'<span class="bad">invalid: {escape(str(turn.get("error")))}</span>')
        if turn.get("reasks"):
            notes.append(f"{turn['reasks']} re-asks")
        raw = turn.get("raw")
        parts.append(
            f'<div class="turn">step {turn["step"]}</div><pre>{escape(turn["observation"])}</pre>'
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
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{CSS}</style></head><body>{''.join(parts)}</body></html>\n"
    )


def write_transcripts(run_dir: Path, records: list[Record]) -> dict[Key, str]:
    """`DIR/transcripts/<env>-<seed>-<episode>.html` for each record whose trajectory
    exists; returns key -> path relative to `run_dir`. Up-to-date pages are kept."""
    out = run_dir / store.TRANSCRIPTS
    out.mkdir(exist_ok=True)
    links: dict[Key, str] = {}
    for record in records:
        key = key_of(record)
        source = run_dir / record.get("trajectory", "")
        if not record.get("trajectory") or not source.is_file():
            continue
        rel = f"{store.TRANSCRIPTS}/{store.stem(*key)}.html"
        target = run_dir / rel
        if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
            data = json.loads(source.read_text(encoding="utf-8"))
            target.write_text(render_transcript(data), encoding="utf-8")
        links[key] = rel
    return links
