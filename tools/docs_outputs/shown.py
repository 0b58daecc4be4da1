"""What the docs show of the commands' output, written by running them.

Each generator takes the `Sources` of one run (README's set-up commands run once, in a
scratch folder, and shared by every region that shows their output; the published
bands) and returns the text of one region, by name (`GENERATORS`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import textenvs
from textenvs.agents.llm.observation_view import changes_view
from textenvs.core import registry
from textenvs.evals.bands import BANDS_FILE, band_for, scenario_label
from tools.docs_outputs.megacity_tables import tables as megacity_tables

SETUP_HEADING = "## Set-up"


def setup_line(root: Path) -> list[str]:
    """The README's set-up command (the first ```bash block of its set-up section), as
    its `&&` steps."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    line = re.search(r"```bash\n(.*?)\n```", readme.split(SETUP_HEADING, 1)[-1], re.DOTALL)
    if line is None:
        raise ValueError("README.md: no ```bash block in the set-up section")
    return [step.strip() for step in line[1].split("&&")]


class Sources:
    """What the regions are generated from, each produced once when first needed (use
    it in a `with` block: the set-up commands' scratch folder goes at its end)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._scratch = tempfile.TemporaryDirectory(prefix="textenvs-docs-")

    def __enter__(self) -> Sources:
        return self

    def __exit__(self, *exc: object) -> None:
        self._scratch.cleanup()

    @cached_property
    def setup_commands(self) -> list[list[str]]:
        """The `textenvs ...` commands of the README's set-up line, as arguments."""
        parts = [step.split() for step in setup_line(self.root)]
        commands = [part[1:] for part in parts if part[0] == "textenvs"]
        if not commands:
            raise ValueError("README.md: the set-up command runs no `textenvs` command")
        return commands

    @cached_property
    def setup(self) -> str:
        """What the set-up commands print on stdout (the progress bars go to stderr), run
        one after another in a scratch folder as in a fresh clone."""
        printed = []
        for command in self.setup_commands:
            done = subprocess.run(
                [sys.executable, "-m", "textenvs.cli", *command],
                cwd=self._scratch.name, capture_output=True, text=True, check=False,
            )  # fmt: skip
            if done.returncode != 0:
                raise RuntimeError(f"textenvs {' '.join(command)} failed:\n{done.stderr}")
            printed.append(done.stdout)
        return "".join(printed)

    @cached_property
    def bands(self) -> dict[str, Any]:
        return json.loads(BANDS_FILE.read_text(encoding="utf-8"))["scenarios"]

    def results_row(self, env: str) -> dict[str, str]:
        """One scenario's row of the printed results table, by column."""
        lines = self.setup.splitlines()
        header = next(line for line in lines if line.startswith("┃"))
        columns = [cell.strip() for cell in header.strip("┃").split("┃")]
        for line in lines:
            cells = [cell.strip() for cell in line.strip("│").split("│")]
            if line.startswith("│") and cells[0] == env:
                return dict(zip(columns, cells, strict=True))
        raise ValueError(f"the results table has no row for {env}")


def pct(value: float, digits: int = 1) -> str:
    return f"{100 * value:.{digits}f}%"


def paragraph(text: str) -> str:
    """Prose wrapped as the docs wrap it."""
    return textwrap.fill(text, width=88, break_long_words=False, break_on_hyphens=False)


# ----- README ---------------------------------------------------------------------------


def scenarios(_: Sources) -> str:
    """The scenario table (`textenvs list`'s names, titles and gymnasium ids)."""
    rows = [f"| {s.title} | `{s.name}` | `{s.env_id}` |" for s in registry.SCENARIOS]
    return "\n".join(["| scenario | CLI name | gymnasium id |", "|---|---|---|", *rows])


def setup_output(sources: Sources) -> str:
    return "```\n" + sources.setup + "```"


def setup_episodes(sources: Sources) -> str:
    return sources.results_row("all")["episodes"]


def treasure_hunt_wins(sources: Sources) -> str:
    return sources.results_row("treasure-hunt")["success"].split()[-1]


def treasure_hunt_note(sources: Sources) -> str:
    """Why Treasure Hunt's score reads 1.00 at a low success rate, with the figures."""
    row = sources.results_row("treasure-hunt")
    band = sources.bands["treasure-hunt"]
    wins, rate = row["success"].split()
    expected = band["ceiling"]
    won, played = (int(n) for n in wins.split("/"))
    how = "more" if won / played > expected else "less"
    return paragraph(
        "`score` is the normalised score against each scenario's reference band (0 = random "
        "play, 1 = the best known play; see [Reading the scores](#reading-the-scores)). "
        f"Treasure Hunt scores {row['score']} while winning {rate}: its score is not read "
        "from wins but from the **expected success of the exploration**, and the scripted "
        "agent explores perfectly (a new tile every step), which wins "
        f"{pct(expected)} of episodes in expectation (the exact optimum); on these "
        f"{played} seeds its sweep happened to reach the Bomb before a Flower {how} often "
        f"than that ({won} wins, 95% CI {row['95% CI'].replace('%-', '-')}; over seeds "
        f"{band['seeds']} the same agent wins {pct(band['success_rate']['scripted'])})."
    )


# ----- docs/evals.md and the scenario pages: the published bands ------------------------


def default_band(sources: Sources, env: str) -> tuple[str, dict[str, Any]]:
    """A scenario's name as reports label it and its band (at its default level, for a
    scenario with levels)."""
    entry = sources.bands[env]
    band = band_for({"scenarios": sources.bands}, env)
    if band is None:
        raise ValueError(f"bands.json has no band for {env}")
    return scenario_label(env, entry.get("default_level")), band


def bands_table(sources: Sources) -> str:
    rows = [
        f"| {name} | {b['metric_label']} | {b['random']:.3f} | {b['scripted']:.3f} | "
        f"{b['ceiling']:.3f} ({b['ceiling_kind']}) |"
        for name, b in (default_band(sources, s.name) for s in registry.SCENARIOS)
    ]
    head = "| scenario | headline metric | random | scripted | ceiling |\n|---|---|---|---|---|"
    return "\n".join([head, *rows])


def band_source(band: dict[str, Any], extra: str = "") -> str:
    return f"`evals/bands.json`, version {band['version']}, seeds {band['seeds']}{extra}"


def band_treasure_hunt(sources: Sources) -> str:
    band = sources.bands["treasure-hunt"]
    skills = band["skills"]
    rows = [
        f"| {who} | {skills[agent]['expected_success']:.4f} | "
        f"{pct(skills[agent]['exploration'])} | {pct(band['success_rate'][agent])} |"
        for agent, who in (("random", "random"), ("scripted", "scripted (the sweep)"))
    ]
    ceiling = f"| ceiling ({band['ceiling_kind']}) | {band['ceiling']:.4f} | 100% | "
    return "\n".join([
        f"Band ({band_source(band, ', one episode each')}):",
        "",
        "| | expected success of the exploration | exploration (new tiles / steps) | "
        "success rate |",
        "|---|---|---|---|",
        *rows,
        ceiling + f"{pct(band['ceiling'], 2)} |",
    ])  # fmt: skip


def band_squad_recon(sources: Sources) -> str:
    band = sources.bands["squad-recon"]
    rows = [
        f"| {agent} | {pct(band['success_rate'][agent])} | "
        f"{pct(band['skills'][agent]['success_on_winnable'])} | "
        f"{band['skills'][agent]['camps_taken']:.3f} |"
        for agent in ("random", "scripted")
    ]
    return "\n".join([
        paragraph(f"Reference band ({band_source(band)}): headline metric the "
                  f"{band['metric_label']}."),
        "",
        "| | success rate | success on winnable seeds | camps taken per episode |",
        "|---|---|---|---|",
        *rows,
        f"| ceiling ({band['ceiling_kind']}) | {pct(band['ceiling'])} | 100% | - |",
    ])  # fmt: skip


def band_em_anomaly(sources: Sources) -> str:
    band = sources.bands["em-anomaly"]
    episodes = band["episodes"]

    def rate(value: float) -> str:
        return f"{pct(value)} ({round(value * episodes)} / {episodes})"

    return "\n".join([
        f"Success over seeds {band['seeds']} (one episode per seed; the reference band in",
        f"`evals/bands.json`, version {band['version']}):",
        "",
        "| agent | success rate |",
        "|---|---|",
        f"| random (uniform command each step) | {rate(band['success_rate']['random'])} |",
        f"| scripted | {rate(band['success_rate']['scripted'])} |",
        f"| ceiling estimate: informed searcher (below) | {rate(band['ceiling'])} |",
    ])  # fmt: skip


def marks_em_anomaly(sources: Sources) -> str:
    band = sources.bands["em-anomaly"]
    columns = ("marks_on_target", "marks_near", "marks_far", "no_mark")
    rows = [
        f"| {agent} | " + " | ".join(str(band["skills"][agent][c]) for c in columns) + " |"
        for agent in ("random", "scripted")
    ]
    return "\n".join([
        f"Marks over seeds {band['seeds']}:",
        "",
        "| agent | on target | 2 steps away | further | no Mark |",
        "|---|---|---|---|---|",
        *rows,
    ])  # fmt: skip


def band_magnetic_field(sources: Sources) -> str:
    levels = sorted(sources.bands["magnetic-field"]["levels"].items(), key=lambda kv: int(kv[0]))
    first = levels[0][1]
    each = "; ".join(
        f"level {level} random {b['random']:.3f}, scripted {b['scripted']:.3f}, ceiling "
        f"{b['ceiling']:.3f} ({b['ceiling_kind']})"
        for level, b in levels
    )
    return paragraph(
        f"Reference bands ({band_source(first, ', one per level')}): the headline metric "
        f"is the {first['metric_label']}: {each}."
    )


def megacity_reference_runs(sources: Sources) -> str:
    return megacity_tables({"scenarios": sources.bands})


# ----- docs/llm-agent.md ----------------------------------------------------------------

#: the Squad Recon turn the changes view is shown for
VIEW_EXAMPLE = ("squad-recon", 0, ["A north; C south", "all east"])


def changes_example(_: Sources) -> str:
    env_name, seed, commands = VIEW_EXAMPLE
    env = textenvs.make(env_name)
    before, _info = env.reset(seed=seed)
    after = before
    for command in commands:
        before, (after, *_rest) = after, env.step(command)
    intro = f"Squad Recon, seed {seed}, after `{commands[0]}` then `{commands[1]}`:"
    return intro + "\n\n```\n" + changes_view(before, after) + "\n```"


GENERATORS: dict[str, Callable[[Sources], str]] = {
    "scenarios": scenarios,
    "setup-output": setup_output,
    "setup-episodes": setup_episodes,
    "treasure-hunt-note": treasure_hunt_note,
    "treasure-hunt-wins": treasure_hunt_wins,
    "bands": bands_table,
    "band-treasure-hunt": band_treasure_hunt,
    "band-squad-recon": band_squad_recon,
    "band-em-anomaly": band_em_anomaly,
    "marks-em-anomaly": marks_em_anomaly,
    "band-magnetic-field": band_magnetic_field,
    "megacity-reference-runs": megacity_reference_runs,
    "changes-example": changes_example,
}
