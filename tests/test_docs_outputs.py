"""The command output README.md and docs/ show is what the commands print
(`tools/docs_outputs`): one slow check runs the README's set-up commands once for every
region that shows their output; the others check the machinery on small files."""

from __future__ import annotations

from pathlib import Path

import pytest

from textenvs.core import registry
from tools.docs_outputs import ROOT, problems, with_current_ids, write, write_measured
from tools.docs_outputs.regions import regions, replace


@pytest.mark.slow
def test_the_docs_show_what_the_commands_print() -> None:
    found = list(problems(ROOT))
    fix = "python -m tools.docs_outputs --write (machine figures: --measure setup|tests)"
    assert not found, "\n".join(found) + f"\n(regenerate: {fix})"


def test_regions_block_and_inline() -> None:
    text = (
        "a <!-- generated: one -->1<!-- end generated --> b\n"
        "<!-- measured: two -->\nx\ny\n<!-- end measured -->\n"
    )
    one, two = regions(text)
    assert (one.kind, one.name, one.block, one.content) == ("generated", "one", False, "1")
    assert (two.kind, two.name, two.block, two.content) == ("measured", "two", True, "x\ny")
    new = replace(text, "generated", {"one": "2"}.get)
    assert new == text.replace("-->1<", "-->2<")
    measured = replace(new, "measured", {"two": "z"}.get)
    assert measured.endswith("<!-- measured: two -->\nz\n<!-- end measured -->\n")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("<!-- generated: one -->\nx\n", "without its partner"),
        ("x\n<!-- end generated -->\n", "without its partner"),
        ("<!-- generated: one -->\nx<!-- end generated -->", "a line of its own"),
        ("<!-- generated: one -->x\ny<!-- end generated -->", "stay on one line"),
    ],
)
def test_a_broken_region_is_an_error(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        regions(text)


def tiny_docs(tmp_path: Path, readme: str) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    return tmp_path


def test_a_shown_output_that_differs_is_found_and_rewritten(tmp_path: Path) -> None:
    """A region typed by hand (an old version's ids in the scenario table) fails the
    check, with a diff, and `--write` makes it what the registry says."""
    treasure = registry.get("treasure-hunt").env_id
    stale = treasure.rsplit("-v", 1)[0] + "-v0"
    table = "| scenario | CLI name | gymnasium id |\n|---|---|---|\n"
    row = f"| T | `t` | `{stale}` |"
    readme = f"# x\n\n<!-- generated: scenarios -->\n{table}{row}\n<!-- end generated -->\n"
    root = tiny_docs(tmp_path, readme)
    found = list(problems(root))
    assert any("region 'scenarios' differs" in p and f"+| {registry.SCENARIOS[0].title}" in p
               for p in found), found  # fmt: skip
    assert any(f"env ids of another version: {stale}" in p for p in found)
    write(root)
    text = (root / "README.md").read_text(encoding="utf-8")
    assert f"`{treasure}`" in text and stale not in text
    assert not any("scenarios" in p or "env ids" in p for p in problems(root))


def test_env_ids_follow_the_registry() -> None:
    scenario = registry.get("megacity")
    version = scenario.env_id.rsplit("-v", 1)[1]
    old = "gym.make('textenvs/Megacity-v0'); ta.make('textenvs-megacity-v0')"
    assert with_current_ids(old) == (
        f"gym.make('{scenario.env_id}'); ta.make('textenvs-megacity-v{version}')"
    )


def test_a_measured_figure_must_state_its_date_and_load(tmp_path: Path) -> None:
    readme = "<!-- measured: setup-timings -->\nIt took 21 s.\n<!-- end measured -->\n"
    root = tiny_docs(tmp_path, readme)
    assert any("states no date and load average" in p for p in problems(root))
    stated = "Measured on 2030-01-02 on a machine at load average\n1.0-2.0: 21 s."
    write_measured({"setup-timings": stated}, root)
    assert stated in (root / "README.md").read_text(encoding="utf-8")
    assert not any("setup-timings" in p for p in problems(root))


def test_a_command_line_with_an_option_its_command_lacks_is_found(tmp_path: Path) -> None:
    readme = (
        "```\ntextenvs rules ENV [--trials K]\ntextenvs eval --env all --seeds 0-9\n"
        "              [--trails K]\n   LLM options: --model M --temprature T\n```\n"
    )
    found = [p for p in problems(tiny_docs(tmp_path, readme)) if "has no" in p]
    assert found == [
        "README.md: `textenvs eval` has no --trails",
        "README.md: `textenvs run` has no --temprature",
    ]
