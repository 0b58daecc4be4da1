"""Trajectories of eval runs as chat-format records, for SFT and rejection sampling.

One record per recorded episode: `messages` is the conversation in the OpenAI chat
format (the system prompt, then per turn the observation as a user message and the
reply that was stepped as an assistant message), and the episode's identity and
outcome sit beside it as columns, with one entry per turn in `rewards`, `parse_ok`,
`parse_errors` and `commands`. Re-ask exchanges inside a turn are not in `messages`
(the trajectory files keep them); the assistant message is the reply that reached
the env, read or not.

`prompt` is where an episode starts, for trainers that sample their own replies
(GRPO-style: TRL's `GRPOTrainer` reads a conversational `prompt` column): the system
message (the rules) and the first observation as a user message.

Episodes are split by seed, so one world never sits in both splits: `eval` holds the
seeds given as `eval_seeds`, by default every tenth seed (`seed % 10 == 0`), and
`train` the rest. The rule does not depend on which runs are exported, so exports of
different runs of the same seeds split alike. A dataset card (`README.md`) describes
the export: its runs, the split rule, counts and columns.

Two formats: `jsonl-chat` (`DIR/train.jsonl` and `DIR/eval.jsonl`, no extra
dependency; `datasets.load_dataset(DIR)` reads them through the card) and `hf`
(`DatasetDict.save_to_disk`, load it with `datasets.load_from_disk`; needs
`textenvs[datasets]`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textenvs.evals import run_folder, store
from textenvs.evals.bands import scenario_label
from textenvs.evals.metrics import Record, level_of

FORMATS = ("hf", "jsonl-chat")
SPLITS = ("train", "eval")
EVAL_EVERY = 10  # by default every tenth seed is held out for eval
CARD = "README.md"


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
    system = {"role": "system", "content": system_message(record["env"], turns)}
    first = turns[0]["observation"] if turns else trajectory.get("final_observation", "")
    messages = [system]
    for turn in turns:
        reply = turn.get("raw")
        messages.append({"role": "user", "content": turn["observation"]})
        messages.append({"role": "assistant", "content": reply if reply else turn["command"]})
    return {
        "env": record["env"],
        "level": record.get("level"),
        "seed": int(record["seed"]),
        "episode": int(record.get("episode", 0)),
        "agent": record.get("agent"),
        "model": record.get("model"),
        "outcome": record["outcome"],
        "success": bool(record["success"]),
        "return": float(record["return"]),
        "steps": int(record["steps"]),
        "invalid_actions": int(record["invalid_actions"]),
        "prompt": [system, {"role": "user", "content": first}],
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
        store.check_run_dir(run_dir, run_folder.EPISODES)
        options = (store.read_config(run_dir) or {}).get("env_options")
        for record in store.read_episodes(run_dir):
            if not keep.keeps(record):
                continue
            record = {**record, "level": level_of(record, options)}  # older runs lack it
            path = run_dir / record.get("trajectory", "")
            if not record.get("trajectory") or not path.is_file():
                raise store.RunDirError(f"{run_dir}: the trajectory of {record['env']} "
                                        f"seed {record['seed']} is missing")  # fmt: skip
            yield chat_record(record, json.loads(path.read_text(encoding="utf-8")))


def split_of(seed: int, eval_seeds: frozenset[int] | None) -> str:
    """`eval` for a held-out seed (`eval_seeds`, by default every tenth), else `train`."""
    held_out = seed % EVAL_EVERY == 0 if eval_seeds is None else seed in eval_seeds
    return "eval" if held_out else "train"


def split_rule(eval_seeds: frozenset[int] | None) -> str:
    if eval_seeds is None:
        return f"`eval` holds the episodes of every seed with seed % {EVAL_EVERY} == 0"
    listed = ", ".join(map(str, sorted(eval_seeds))) or "none"
    return f"`eval` holds the episodes of seeds {listed}"


def write_jsonl(splits: dict[str, list[dict[str, Any]]], out_dir: Path) -> None:
    """`out_dir/<split>.jsonl`, one row per line."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        store.write_atomic(out_dir / f"{split}.jsonl", text)


def write_hf(splits: dict[str, list[dict[str, Any]]], out_dir: Path) -> None:
    """A Hugging Face `DatasetDict` saved to `out_dir` (`datasets.load_from_disk`); an
    empty split keeps the columns and types of the others."""
    from datasets import Dataset, DatasetDict

    features = Dataset.from_list([row for rows in splits.values() for row in rows]).features
    data = {
        split: Dataset.from_list(rows, features=features)
        if rows
        else Dataset.from_dict({name: [] for name in features}, features=features)
        for split, rows in splits.items()
    }
    # One shard each: datasets saves an empty split without one, then cannot load it.
    DatasetDict(data).save_to_disk(str(out_dir), num_shards=dict.fromkeys(data, 1))


def card(splits: dict[str, list[dict[str, Any]]], fmt: str, rule: str, run_dirs: list[Path]) -> str:
    """The dataset card: what the export holds and how to load it."""
    rows = [row for split in splits.values() for row in split]
    agents = sorted({f"{r['agent']}" + (f" ({r['model']})" if r["model"] else "") for r in rows})
    played = sorted({(r["env"], r["level"]) for r in rows}, key=str)
    front = ["---"]
    if fmt == "jsonl-chat":  # `datasets.load_dataset(FOLDER)` reads the splits from here
        front += ["configs:", "- config_name: default", "  data_files:"]
        # datasets cannot load an empty split: the card names only the others
        front += [f"  - split: {s}\n    path: {s}.jsonl" for s, rows in splits.items() if rows]
    front += ["tags:", "- textenvs", "---"]
    counts = "\n".join(
        f"| {scenario_label(env, level)} | "
        + " | ".join(
            str(sum((r["env"], r["level"]) == (env, level) for r in splits[s])) for s in splits
        )
        + " |"
        for env, level in played
    )
    load = (
        "datasets.load_dataset(FOLDER)"
        if fmt == "jsonl-chat"
        else "datasets.load_from_disk(FOLDER)"
    )
    return "\n".join(
        [
            *front,
            "",
            "# textenvs episodes",
            "",
            f"Episodes of textenvs scenarios played by {', '.join(agents)}, one row per "
            "episode, exported by `textenvs export` from the eval runs "
            + ", ".join(f"`{run.name}`" for run in run_dirs)
            + ".",
            "",
            f"Load: `{load}`: a `DatasetDict` with the splits `train` and `eval`"
            + (
                " (an empty split is left out). `load_dataset` caches what it read: after a new"
                ' export into the same folder, add `download_mode="force_redownload"`.'
                if fmt == "jsonl-chat"
                else "."
            ),
            "",
            "## Splits",
            "",
            f"By seed, so one world never sits in both: {rule}; `train` holds the others.",
            "",
            "| scenario | " + " | ".join(splits) + " |",
            "|---|" + "---|" * len(splits),
            counts,
            "",
            "## Columns",
            "",
            "- `prompt`: the system message (the scenario's rules) and the first observation as a"
            " user message; the start of an episode for GRPO-style trainers, which sample their"
            " own replies and score them by playing the scenario (`textenvs.make(env)`,"
            ' `reset(seed=seed)`, with `options={"level": level}` where `level` is set).',
            "- `messages`: the whole episode in chat form (system, then per turn the observation"
            " and the reply that was stepped), for SFT.",
            "- `rewards`, `parse_ok`, `parse_errors`, `commands`: one entry per turn.",
            "- `env`, `level` (the scenario's difficulty level; empty for a scenario without"
            " levels), `seed`, `episode`, `agent`, `model`, `outcome`, `success`, `return`,"
            " `steps`, `invalid_actions`, `final_observation`: the episode.",
            "",
        ]
    )


def export(
    run_dirs: list[Path],
    out_dir: Path,
    fmt: str,
    keep: ExportFilter,
    eval_seeds: frozenset[int] | None = None,
) -> dict[str, int]:
    """Write the kept episodes of `run_dirs` to `out_dir` in `fmt`, split by seed (see
    `split_of`), with a dataset card; returns the episode count per split."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    splits: dict[str, list[dict[str, Any]]] = {split: [] for split in SPLITS}
    for row in chat_records(run_dirs, keep):
        splits[split_of(row["seed"], eval_seeds)].append(row)
    if not any(splits.values()):
        raise ValueError("no recorded episode matches the filters: nothing to export")
    (write_hf if fmt == "hf" else write_jsonl)(splits, out_dir)
    store.write_atomic(out_dir / CARD, card(splits, fmt, split_rule(eval_seeds), run_dirs))
    return {split: len(rows) for split, rows in splits.items()}
