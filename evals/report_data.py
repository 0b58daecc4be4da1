"""What a report is made of: the eval runs read back from their folders (`Run`: config,
episodes, per-scenario summary) and the `Report` every renderer draws (`report_md`,
`report_html`, `results_files`, `figures`); `report.py` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from textenvs.evals import run_folder, store
from textenvs.evals.bands import band_for, scenario_label
from textenvs.evals.learning import learning_curves
from textenvs.evals.metrics import Record, key_of, summarize_by_env

#: (run label, env, seed, episode) or ("vs", run label, env, seed, episode) -> page
Links = dict[tuple, str]


@dataclass
class Run:
    path: Path
    label: str
    config: dict[str, Any]
    records: list[Record]
    summary: dict[str, Record]

    @cached_property
    def learning(self) -> dict[str, Record]:
        """Learning curves per env (trial-mode runs; {} otherwise)."""
        return learning_curves(self.records)

    @property
    def agent(self) -> str:
        agent = self.config.get("agent", {})
        # the action mode too: json-mode runs measure decisions only, text-mode runs
        # format-following as well, so the two are never compared unnamed; and
        # observations sent as changes, another prompt than the whole observations
        details = [str(agent[k]) for k in ("model", "action_mode") if agent.get(k)]
        if agent.get("observations", "full") != "full":
            details.append(f"observations: {agent['observations']}")
        return f"{agent.get('name', '?')}" + (f" ({', '.join(details)})" if details else "")

    @property
    def versions(self) -> dict[str, str]:
        return {env: str(v) for env, v in (self.config.get("envs") or {}).items()}

    @property
    def levels(self) -> dict[str, int | None]:
        """The level each scenario played (None: it has no levels, or mixed them): as its
        episodes say, else as the run's config planned it."""
        played = {env: s.get("level") for env, s in self.summary.items() if env != "all"}
        return {**(self.config.get("levels") or {}), **played}

    def env_label(self, env: str) -> str:
        """The scenario as this run played it: `megacity (level 2)`."""
        return scenario_label(env, self.levels.get(env))


def load_run(path: Path, bands: dict[str, Any] | None = None) -> Run:
    store.check_run_dir(path, run_folder.CONFIG)
    config = store.read_config(path)
    if config is None:
        raise store.RunDirError(f"{path} is not an eval run (no {run_folder.CONFIG})")
    seen: dict[tuple[str, int, int], Record] = {}
    for record in store.read_episodes(path):
        seen.setdefault(key_of(record), record)
    records = list(seen.values())
    summary = summarize_by_env(records, config.get("prices"), bands, config.get("env_options"))
    return Run(path, path.name, config, records, summary)


def load_runs(paths: list[Path], bands: dict[str, Any] | None = None) -> list[Run]:
    runs = [load_run(p, bands) for p in paths]
    labels = [r.path.resolve().name or str(r.path) for r in runs]
    for i, run in enumerate(runs):  # unique labels even for runs in same-named folders
        run.label = labels[i] if labels.count(labels[i]) == 1 else f"{labels[i]}#{i + 1}"
    return runs


def env_order(runs: list[Run]) -> list[str]:
    envs: list[str] = []
    for run in runs:
        envs += [e for e in run.summary if e != "all" and e not in envs]
    return envs


@dataclass
class Report:
    runs: list[Run]
    bands: dict[str, Any]
    links: Links
    generated: str

    @property
    def envs(self) -> list[str]:
        return env_order(self.runs)

    def band(self, env: str, run: Run | None = None) -> dict[str, Any] | None:
        """The band `run` (by default the first, the baseline) is read against: the
        band of the level it played."""
        run = run or next((r for r in self.runs if env in r.summary), self.runs[0])
        return band_for(self.bands, env, run.levels.get(env))
