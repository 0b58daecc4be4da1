"""Command output shown in README.md and docs/ is written by running the commands.

    python -m tools.docs_outputs --write           # regenerate every generated region
    python -m tools.docs_outputs --check           # exit 1 where the docs differ
    python -m tools.docs_outputs --measure setup   # machine figures: the set-up's times
    python -m tools.docs_outputs --measure tests   # ... the test suite's count and time

A region the docs show is marked (`regions.py`); `shown.py` generates each generated
region by name (the README's set-up commands are run once, in a scratch folder, for
every region that shows their output), and `measured.py` writes the measured ones.
Gymnasium and TextArena ids written in the docs follow the registry too (outside
`docs/performance.md`, whose figures name the versions they were measured on).
`tests/test_docs_outputs.py` runs the check.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import re
from collections.abc import Iterator
from pathlib import Path

from textenvs.core import registry
from tools.docs_outputs.regions import regions, replace
from tools.docs_outputs.shown import GENERATORS, Sources

ROOT = Path(__file__).resolve().parents[2]
#: measured region names, by the measurement that writes them
MEASURED = {
    "setup": ("venv-size", "run-size", "report-size", "setup-timings"),
    "tests": ("test-figures",),
}
#: files whose env ids name the versions their figures were measured on
HISTORICAL = ("docs/performance.md",)
#: how a measured block states when and under what load it was measured
STATED = re.compile(r"\d{4}-\d{2}-\d{2}.*load average\s+\d", re.DOTALL)
_ENV_ID = re.compile(r"textenvs/[A-Za-z]+-v\d+|textenvs-[a-z]+(?:-[a-z]+)*-v\d+")


def doc_files(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def current_ids() -> dict[str, str]:
    """Every env id as written without its version -> the id of the current version."""
    ids = {}
    for scenario in registry.SCENARIOS:
        base, version = scenario.env_id.rsplit("-v", 1)
        ids[base] = scenario.env_id
        ids[f"textenvs-{scenario.name}"] = f"textenvs-{scenario.name}-v{version}"
    return ids


def with_current_ids(text: str) -> str:
    ids = current_ids()
    return _ENV_ID.sub(lambda m: ids.get(m[0].rsplit("-v", 1)[0], m[0]), text)


def problems(root: Path = ROOT) -> Iterator[str]:
    """Where the docs differ from what the commands print (each a line to show)."""
    used: set[str] = set()
    with Sources(root) as sources:
        for path in doc_files(root):
            name = path.relative_to(root)
            text = path.read_text(encoding="utf-8")
            try:
                found = regions(text)
            except ValueError as exc:
                yield f"{name}: {exc}"
                continue
            for region in found:
                used.add(region.name)
                if region.kind == "measured":
                    if not any(region.name in names for names in MEASURED.values()):
                        yield f"{name}: no measurement writes the region {region.name!r}"
                    elif region.block and not STATED.search(region.content):
                        yield f"{name}: region {region.name!r} states no date and load average"
                elif region.name not in GENERATORS:
                    yield f"{name}: no generator for the region {region.name!r}"
                elif (wanted := GENERATORS[region.name](sources)) != region.content:
                    yield f"{name}: region {region.name!r} differs:\n{diff(region.content, wanted)}"
            if str(name) not in HISTORICAL and with_current_ids(text) != text:
                stale = sorted(set(_ENV_ID.findall(text)) - set(current_ids().values()))
                yield f"{name}: env ids of another version: {', '.join(stale)}"
    every = set(GENERATORS).union(*MEASURED.values())
    for missing in sorted(every - used):
        yield f"no region shows {missing!r}"
    yield from unknown_flags(root)


def unknown_flags(root: Path) -> Iterator[str]:
    """Options that the docs' command lines give a `textenvs` subcommand it does not
    take (a synopsis or an example that drifted from `--help`)."""
    options = subcommand_options()
    for path in doc_files(root):
        text = path.read_text(encoding="utf-8")
        for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
            command = None
            for line in block.splitlines():
                line = line.split(" # ", 1)[0]  # a shell comment
                start = re.match(r"\s*textenvs ([a-z][a-z-]*)\b", line)
                if start:
                    command = start[1]
                elif "LLM options:" in line:
                    command = "run"  # the agent options `run` and `eval` share
                elif not line.startswith(" "):
                    command = None
                for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line) if command else []:
                    if flag not in options.get(command, ()):
                        yield f"{path.relative_to(root)}: `textenvs {command}` has no {flag}"


def help_text(*argv: str) -> str:
    """What `textenvs ARGV --help` prints."""
    from textenvs.cli import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.suppress(SystemExit):
        main([*argv, "--help"])
    return printed.getvalue()


def subcommand_options() -> dict[str, set[str]]:
    """Each subcommand's options, as its `--help` lists them."""
    names = re.findall(r"^    ([a-z][a-z-]*)(?: |$)", help_text(), re.MULTILINE)
    flag = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
    return {name: set(flag.findall(help_text(name))) for name in names}


def diff(shown: str, printed: str) -> str:
    lines = difflib.unified_diff(
        shown.splitlines(), printed.splitlines(), "shown", "printed", lineterm="", n=1
    )
    return "\n".join(lines)


def write(root: Path = ROOT) -> list[Path]:
    """Regenerate every generated region and env id; the files that changed."""
    changed = []
    with Sources(root) as sources:

        def generated(name: str) -> str | None:
            return GENERATORS[name](sources) if name in GENERATORS else None

        for path in doc_files(root):
            text = path.read_text(encoding="utf-8")
            new = replace(text, "generated", generated)
            if str(path.relative_to(root)) not in HISTORICAL:
                new = with_current_ids(new)
            if new != text:
                path.write_text(new, encoding="utf-8")
                changed.append(path)
    return changed


def write_measured(figures: dict[str, str], root: Path = ROOT) -> list[Path]:
    """Write measured figures into their regions; the files that changed."""
    changed = []
    for path in doc_files(root):
        text = path.read_text(encoding="utf-8")
        new = replace(text, "measured", figures.get)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed
