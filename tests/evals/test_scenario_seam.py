"""Adding a scenario touches its own package, its prompt, its docs and its tests, and
nothing in `evals/`: the eval code names no scenario and imports none, and every
registered scenario says its own scores (`core.scoring`) through the registry."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import textenvs
from tests.conftest import play
from textenvs.core.scoring import Scoring
from textenvs.evals.metrics import summarize
from textenvs.evals.records import episode_record

EVALS = Path(textenvs.evals.__file__).parent
KINDS = {"exact", "bound", "estimate"}


def scenario_words() -> set[str]:
    """Every way code spells a registered scenario: its name, its package, its class."""
    words = set()
    for name in textenvs.names():
        scenario = textenvs.get(name)
        package = scenario.entry_point.split(".")[2]
        words |= {name, package, scenario.load().__name__.lower()}
    return {w.lower() for w in words}


def code_words(source: str) -> list[tuple[int, str]]:
    """The strings (docstrings left out), names and imported modules of a module's code,
    with their lines."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                out.append((node.lineno, node.value))
        elif isinstance(node, ast.Name):
            out.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom):
            out.append((node.lineno, node.module or ""))
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
    return out


def test_the_eval_code_names_no_scenario() -> None:
    words = scenario_words()
    found = [
        f"{path.name}:{line}: {text!r}"
        for path in sorted(EVALS.glob("*.py"))
        for line, text in code_words(path.read_text(encoding="utf-8"))
        if any(word in text.lower().replace("_", "-") or word in text.lower() for word in words)
    ]
    assert not found, "scenario knowledge in evals/ (it belongs to the scenario):\n" + "\n".join(
        found
    )


def test_the_check_sees_a_scenario_named_in_code() -> None:
    """The check above is not blind: a scenario name in a string, or a scenario import,
    is found; the same words in a docstring are not."""
    source = (
        '"""Megacity in a docstring."""\n'
        "from textenvs.scenarios.squad_recon import rules\n"
        "HEADLINE = {'treasure-hunt': 1}\n"
    )
    texts = [text for _line, text in code_words(source)]
    words = scenario_words()
    hits = [t for t in texts if any(w in t.lower() for w in words)]
    assert "textenvs.scenarios.squad_recon" in hits and "treasure-hunt" in hits
    assert not any("Megacity" in t for t in texts)


@pytest.mark.parametrize("name", textenvs.names())
def test_every_scenario_says_its_scores_from_its_own_package(name: str) -> None:
    scenario = textenvs.get(name)
    package = scenario.entry_point.rsplit(".", 1)[0]
    assert scenario.scoring_entry_point.startswith(package.rsplit(".", 1)[0] + ".")
    scoring = scenario.scoring()
    assert isinstance(scoring, Scoring)
    records = []
    for seed in (0, 1):
        result = play(name, "scripted", seed)
        records.append(episode_record(result, (name, seed, 0), None, ""))
    summary = summarize(records)
    assert set(scoring.labels) == set(summary["skills"]), "every figure has its label"
    assert all(kind in {"share", "count", "mean"} for _label, kind in scoring.labels.values())
    field = scoring.headline.field
    if field.startswith("skills."):
        assert field.removeprefix("skills.") in summary["skills"]
    else:
        assert field in {"success_rate", "mean_return"}
    value, kind, method = scoring.ceiling([0, 1], 1.0)
    assert 0.0 <= value <= 1.0 and kind in KINDS and method
