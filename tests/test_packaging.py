"""The wheel installs one top-level name, `textenvs`, and works outside the source tree."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_has_one_top_level_name_and_runs_outside_the_tree(tmp_path: Path) -> None:
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps"]
    subprocess.run(
        [*pip_wheel, "-w", str(tmp_path / "dist"), str(ROOT)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("textenvs-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "site")
    assert {n.split("/")[0] for n in names} == {
        "textenvs",
        wheel.name.split("-py")[0] + ".dist-info",
    }
    assert "textenvs/prompts/system.md" in names and "textenvs/agents/llm/agent.py" in names
    assert {"index.html", "app.js", "style.css"} <= {  # the play page
        n.rsplit("/", 1)[1] for n in names if n.startswith("textenvs/play/static/")
    }

    code = (
        "import textenvs, textenvs.agents, textenvs.evals, textenvs.prompts\n"
        "print(textenvs.__file__)\n"
        "print(all(textenvs.prompts.rules_text(n) for n in textenvs.names()))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(tmp_path / 'site')!r})\n{code}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    where, rules_ok = done.stdout.split()
    assert where.startswith(str(tmp_path / "site")) and rules_ok == "True"


def test_ci_runs_the_readme_test_command_and_the_first_command_is_lean() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    first, tests = re.findall(r"```bash\n(.*?)\n```", setup, flags=re.S)[:2]
    # The main job needs only the base install, and ends with the report.
    assert "pip install -e . &&" in first and "[dev]" not in first
    assert first.endswith("&& textenvs report runs/scripted")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci  # one line, verbatim
    assert "ruff check ." in tests and "pytest" in tests
