"""Trajectories of eval runs as chat-format records, for SFT and rejection sampling.

One record per recorded episode: `messages` is the conversation in the OpenAI chat
format (the system prompt, then per turn the observation as a user message and the
reply that was stepped as an assistant message), and the episode's identity and
outcome sit beside it as columns, with one entry per turn in `rewards`, `parse_ok`,
`parse_errors` and `commands`. Re-ask exchanges inside a turn are not in `messages`
(the trajectory files keep them); the assistant message is the reply that reached
the env, read or not.

Two formats: `jsonl-chat` (`DIR/train.jsonl`, no extra dependency; load it with
`datasets.load_dataset("json", data_files=...)`) and `hf` (`Dataset.save_to_disk`,
load it with `datasets.load_from_disk`; needs `textenvs[datasets]`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textenvs.evals import store
from textenvs.evals.metrics import Record

FORMATS = ("hf", "jsonl-chat")
JSONL_NAME = "train.jsonl"


@dataclass(frozen=True)
class ExportFilter:
    only_success: bool = False
    #: agent names or model names to keep (empty: all)
    agents: frozenset[str] = field(default_factory=frozenset)
    #: scenario names to keep (empty: all)
    envs: frozenset[str] = field(default_factory=frozenset)

    def keeps(self, record: Record) -> bool:
        if self.only_success and not record.get("success"):
            return False
        if self.agents and not {record.get("agent"), record.get("model")} & self.agents:
            return False
        return not self.envs or record.get("env") in self.envs


def system_message(env: str, turns: list[dict[str, Any]]) -> str:
    """The system prompt the agent had: the llm agent records it on its first turn;
    other agents were not prompted, so the scenario's standard prompt stands in."""
    recorded = turns[0].get("record", {}).get("system") if turns else None
    if recorded:
        return str(recorded)
    from textenvs.prompts import system_prompt

    try:
        return system_prompt(env)
    except FileNotFoundError:  # a scenario without a prompt file (e.g. from a newer run)
        return ""


def chat_record(record: Record, trajectory: dict[str, Any]) -> dict[str, Any]:
    """One episode as a chat-format row."""
    turns = trajectory.get("turns", [])
    messages = [{"role": "system", "content": system_message(record["env"], turns)}]
    for turn in turns:
        reply = turn.get("raw")
        messages.append({"role": "user", "content": turn["observation"]})
        messages.append({"role": "assistant", "content": reply if reply else turn["command"]})
    return {
        "env": record["env"],
        "seed": int(record["seed"]),
        "episode": int(record.get("episode", 0)),
        "agent": record.get("agent"),
        "model": record.get("model"),
        "outcome": record["outcome"],
        "success": bool(record["success"]),
        "return": float(record["return"]),
        "steps": int(record["steps"]),
        "invalid_actions": int(record["invalid_actions"]),
        "messages": messages,
        "rewards": [float(t["reward"]) for t in turns],
        "parse_ok": [not t["invalid_action"] for t in turns],
        "parse_errors": [t.get("error") for t in turns],
        "commands": [t["command"] for t in turns],
        "final_observation": trajectory.get("final_observation", ""),
    }


def chat_records(run_dirs: Iterable[Path], keep: ExportFilter) -> Iterator[dict[str, Any]]:
    """The kept episodes of each run, in recorded order. Raises `store.RunDirError` for
    a folder that is not a run, and for a recorded episode whose trajectory is missing."""
    for run_dir in run_dirs:
        if not (run_dir / store.EPISODES).is_file():
            raise store.RunDirError(f"{run_dir} is not an eval run (no {store.EPISODES})")
        for record in store.read_episodes(run_dir):
            if not keep.keeps(record):
                continue
            path = run_dir / record.get("trajectory", "")
            if not record.get("trajectory") or not path.is_file():
                raise store.RunDirError(f"{run_dir}: the trajectory of {record['env']} "
                                        f"seed {record['seed']} is missing")  # fmt: skip
            yield chat_record(record, json.loads(path.read_text(encoding="utf-8")))


def write_jsonl(rows: list[dict[str, Any]], out_dir: Path) -> None:
    """`out_dir/train.jsonl`, one row per line."""
    out_dir.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    store.write_atomic(out_dir / JSONL_NAME, text)


def write_hf(rows: list[dict[str, Any]], out_dir: Path) -> None:
    """A Hugging Face dataset saved to `out_dir` (`datasets.load_from_disk`)."""
    from datasets import Dataset

    Dataset.from_list(rows).save_to_disk(str(out_dir))


def export(run_dirs: list[Path], out_dir: Path, fmt: str, keep: ExportFilter) -> int:
    """Write the kept episodes of `run_dirs` to `out_dir` in `fmt`; returns how many."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    rows = list(chat_records(run_dirs, keep))
    if not rows:
        raise ValueError("no recorded episode matches the filters: nothing to export")
    (write_hf if fmt == "hf" else write_jsonl)(rows, out_dir)
    return len(rows)
