"""The figures that depend on the machine, measured on a fresh clone of this checkout's
last commit: how long the README's set-up takes and how much it writes (`setup`), and
how many tests the README's test command runs and how long it takes (`tests`). Each is
stated with its date and the load average it was measured at; the tests never compare
them (they would fail on another machine, or on this one under other load)."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tools.docs_outputs.regions import regions
from tools.docs_outputs.shown import paragraph, setup_line

MACHINE = "the shared 2-core development machine"
REMEASURE = "`python -m tools.docs_outputs --measure {name}` measures {them} again"


@dataclass
class Clock:
    """Wall time and the range of the 1-minute load average over timed shell steps."""

    loads: list[float] = field(default_factory=list)

    def run(self, script: str, cwd: Path) -> tuple[float, str]:
        """Run `script` in bash in `cwd`: its wall seconds and stdout. A failure raises
        with its output."""
        self.loads.append(os.getloadavg()[0])
        started = time.perf_counter()
        done = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        self.loads.append(os.getloadavg()[0])
        if done.returncode != 0:
            output = done.stdout + done.stderr
            raise RuntimeError(f"`{script}` failed ({done.returncode}):\n{output}")
        return seconds, done.stdout

    def stated(self) -> str:
        low, high = min(self.loads), max(self.loads)
        day = datetime.now(UTC).strftime("%Y-%m-%d")
        return f"on {day} on {MACHINE} at load average {low:.1f}-{high:.1f}"


def megabytes(path: Path) -> int:
    done = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[0])


def size(path: Path) -> str:
    mb = megabytes(path)
    return f"{mb / 1024:.1f} GB" if mb >= 1024 else f"{mb} MB"


def fresh_clone(root: Path, scratch: Path) -> Path:
    """A clone of `root`'s last commit (what a reader clones: nothing uncommitted)."""
    clone = scratch / "textenvs"
    subprocess.run(["git", "clone", "--quiet", str(root), str(clone)], check=True)
    return clone


def shown_output(root: Path) -> str:
    """What README.md shows the set-up commands print (its `setup-output` region)."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    return next(r.content for r in regions(readme) if r.name == "setup-output")


def measure_setup(root: Path) -> dict[str, str]:
    """The README's set-up line on a fresh clone, timed in three parts (the install, the
    eval, the report), and the sizes of what it wrote. The clone must print what the
    README shows, or nothing is written."""
    steps = setup_line(root)
    install = next(i for i, step in enumerate(steps) if step.startswith("pip install")) + 1
    activate = ". .venv/bin/activate && "
    with tempfile.TemporaryDirectory(prefix="textenvs-measure-") as scratch:
        clone = fresh_clone(root, Path(scratch))
        clock = Clock()
        install_s, _ = clock.run(" && ".join(steps[:install]), clone)
        (eval_s, evaluated), (report_s, reported) = (
            clock.run(activate + step, clone) for step in steps[install:]
        )
        shown = shown_output(root)
        if "```\n" + evaluated + reported + "```" != shown:
            raise RuntimeError(
                f"the fresh clone printed:\n{evaluated}{reported}\nREADME shows:\n{shown}"
            )
        sizes = {
            "venv-size": size(clone / ".venv"),
            "run-size": size(clone / "runs" / "scripted"),
            "report-size": size(clone / "reports" / "scripted"),
        }
    timings = paragraph(
        f"How long it takes, measured {clock.stated()}, on a clean clone in a fresh venv with "
        f"pip's download cache already warm (a cold cache adds the downloads): the install "
        f"{install_s:.0f} s, the eval {eval_s:.0f} s, the report {report_s:.0f} s. Times and "
        f"sizes depend on the machine and its load: "
        + REMEASURE.format(name="setup", them="them")
        + ", and the tests do not check them."
    )
    return {**sizes, "setup-timings": timings}


def measure_tests(root: Path) -> dict[str, str]:
    """`.ci/run` on a fresh clone: the `dev` install timed, the venv's size, and the
    README's test command timed with its count of tests."""
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    command = ci.strip().splitlines()[-1]  # the README's test command, verbatim
    install_part, test_part = (part.strip() for part in command.split("&&", 1))
    with tempfile.TemporaryDirectory(prefix="textenvs-measure-") as scratch:
        clone = fresh_clone(root, Path(scratch))
        clock = Clock()
        clock.run("python3 -m venv .venv && .venv/bin/pip install -q --upgrade pip", clone)
        install_s, _ = clock.run(f". .venv/bin/activate && {install_part}", clone)
        venv = size(clone / ".venv")
        suite_s, printed = clock.run(f". .venv/bin/activate && {test_part}", clone)
    counts = dict(
        (kind, int(n)) for n, kind in re.findall(r"(\d+) (passed|skipped|failed)", printed)
    )
    tests = sum(counts.values())
    return {
        "test-figures": paragraph(
            f"Measured {clock.stated()}, on a fresh clone: installing the `dev` extra took "
            f"{install_s / 60:.1f} minutes with a warm cache (the venv grows to {venv}), and "
            f"the command above ran {tests:,} tests ({counts.get('passed', 0):,} passed, "
            f"{counts.get('skipped', 0)} skipped) in {suite_s / 60:.1f} minutes. The count "
            "grows with the suite and the times depend on the machine and its load: "
            + REMEASURE.format(name="tests", them="both")
            + "; the tests do not check them."
        )
    }


MEASUREMENTS: dict[str, Callable[[Path], dict[str, str]]] = {
    "setup": measure_setup,
    "tests": measure_tests,
}
