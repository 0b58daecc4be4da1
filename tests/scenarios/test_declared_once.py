"""A scenario's facts are declared once, in its own package (`declaration.py`), and every
place that shows them agrees with the declaration: the registry, the env class and its
docstring, gymnasium, the Inspect tasks, the scripted agents, the rules prompt and the
scenario's docs page. Code elsewhere restates none of them."""

from __future__ import annotations

import ast
import importlib
import re
from importlib.resources import files
from pathlib import Path

import gymnasium
import pytest

import textenvs
from tests.conftest import play
from tests.evals.test_scenario_seam import code_words
from textenvs.agents.scripted import ScriptedPolicy, load_policy, load_reference
from textenvs.core.declaration import Scenario
from textenvs.prompts import prompt_name, rules_text

DOCS = Path(__file__).resolve().parents[2] / "docs"
INSPECT_TASKS = Path(textenvs.__file__).parent / "adapters" / "inspect" / "tasks.py"
SCENARIO_TASK = "scenario_task"  # the one factory every Inspect task calls
VERSION_LINE = re.compile(r"^- v(\d+)\b")


def package_of(scenario: Scenario) -> str:
    """`textenvs.scenarios.<package>`, from where its env class lives."""
    return scenario.entry_point.partition(":")[0].rsplit(".", 1)[0]


def version_history(text: str) -> list[str]:
    """The lines of the `## Version history` section (up to the next heading), blank lines
    left out, from its first version entry (`- vN: ...`) on."""
    section = text.split("## Version history", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip() for line in section.splitlines() if line.strip()]
    first = next(i for i, line in enumerate(lines) if VERSION_LINE.match(line))
    return lines[first:]


def versions(history: list[str]) -> list[int]:
    """The version numbers that a history's entries name, in order."""
    return [int(match[1]) for line in history if (match := VERSION_LINE.match(line))]


def inspect_tasks() -> dict[str, str]:
    """Each `@task(name=...)` in the Inspect adapter's source (as `inspect list tasks` reads
    it) -> the scenario name its body passes to `scenario_task`."""
    tasks: dict[str, str] = {}
    for node in ast.parse(INSPECT_TASKS.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", "") == "task":
                (name,) = [k.value for k in decorator.keywords if k.arg == "name"]
                calls = [
                    call.args[0]
                    for call in ast.walk(node)
                    if isinstance(call, ast.Call)
                    and getattr(call.func, "id", "") == "scenario_task"
                ]
                assert len(calls) == 1 and isinstance(calls[0], ast.Constant), node.name
                tasks[ast.literal_eval(name)] = calls[0].value
    return tasks


@pytest.mark.parametrize("name", textenvs.names())
def test_the_registry_holds_the_package_declaration(name: str) -> None:
    scenario = textenvs.get(name)
    package = importlib.import_module(package_of(scenario))
    assert scenario is package.SCENARIO
    assert scenario is importlib.import_module(f"{package.__name__}.declaration").SCENARIO
    assert scenario.scoring_entry_point.startswith(package.__name__ + ".")
    assert scenario.env_id == f"textenvs/{scenario.gym_name}-v{scenario.version}"


def test_the_registry_lists_the_scenarios_in_their_declared_order() -> None:
    orders = [scenario.order for scenario in textenvs.SCENARIOS]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    assert textenvs.names() == [scenario.name for scenario in textenvs.SCENARIOS]


@pytest.mark.parametrize("name", textenvs.names())
def test_the_env_class_reads_the_declaration(name: str) -> None:
    scenario = textenvs.get(name)
    env_class = scenario.load()
    assert (env_class.name, env_class.title, env_class.version) == (
        scenario.name,
        scenario.title,
        scenario.version,
    )
    doc = env_class.__doc__ or ""
    assert doc.splitlines()[0] == f"{scenario.title} (`{scenario.env_id}`, `{scenario.name}`)."
    history = version_history(doc)
    assert versions(history) == list(range(int(scenario.version) + 1))
    assert len(versions(history)) == len(history), "one line a version; the detail in docs"


@pytest.mark.parametrize("name", textenvs.names())
def test_gymnasium_registers_the_declared_id(name: str) -> None:
    scenario = textenvs.get(name)
    assert gymnasium.spec(scenario.env_id).entry_point == scenario.entry_point
    registered = [i for i in gymnasium.registry if i.startswith(f"textenvs/{scenario.gym_name}-v")]
    assert registered == [scenario.env_id]
    env = gymnasium.make(scenario.env_id)
    try:
        assert env.unwrapped.name == scenario.name
    finally:
        env.close()


def test_every_scenario_has_its_inspect_task() -> None:
    """Inspect reads `@task(name="...")` from source, so the names are written out; each
    must be a declared scenario and play that scenario."""
    tasks = inspect_tasks()
    assert tasks == {**{name: name for name in textenvs.names()}, "all": "all"}


@pytest.mark.parametrize("name", textenvs.names())
def test_the_scripted_agent_plays_the_declared_baseline(name: str) -> None:
    """The policy the scripted agent loads is the declared one, sits beside the other
    scripted agents under the scenario's package name (as its docs page says), and plays
    the scenario: every command it sends is read."""
    scenario = textenvs.get(name)
    policy = load_policy(name)
    assert issubclass(policy, ScriptedPolicy)
    assert f"{policy.__module__}:{policy.__qualname__}" == scenario.scripted_entry_point
    package = package_of(scenario).rsplit(".", 1)[1]
    assert policy.__module__ == f"textenvs.agents.scripted.{package}"
    page = (DOCS / "scenarios" / f"{name}.md").read_text(encoding="utf-8")
    named = set(re.findall(r"scripted agent in\s+`agents/scripted/(\w+)\.py`", page))
    assert named <= {package}
    result = play(name, "scripted", 0)
    assert result.error is None and result.steps > 0 and result.invalid_actions == 0
    reference = load_reference(name)
    if scenario.reference_entry_point is None:
        assert reference is None
    else:
        assert reference is not None
        assert f"{reference.__module__}:{reference.__qualname__}" == (
            scenario.reference_entry_point
        )


@pytest.mark.parametrize("name", textenvs.names())
def test_the_rules_prompt_is_the_declared_one(name: str) -> None:
    scenario = textenvs.get(name)
    assert (files("textenvs.prompts") / f"{scenario.rules_prompt}.md").is_file()
    assert prompt_name(name) == scenario.rules_prompt
    assert textenvs.make(name).rules == rules_text(scenario.rules_prompt)


@pytest.mark.parametrize("name", textenvs.names())
def test_the_docs_page_states_the_declared_facts(name: str) -> None:
    scenario = textenvs.get(name)
    page = (DOCS / "scenarios" / f"{name}.md").read_text(encoding="utf-8")
    heading = page.splitlines()[0]
    assert heading.startswith("# ") and heading.endswith(
        f"(`{scenario.name}`, `{scenario.env_id}`)"
    ), heading
    assert scenario.title in " ".join(page.splitlines()[:3])
    assert versions(version_history(page))[-1] == int(scenario.version)


@pytest.mark.slow
def test_no_code_outside_a_scenario_restates_its_id_or_title() -> None:
    roots = {
        Path(importlib.import_module(module).__file__).parent  # type: ignore[arg-type]
        for module in ("textenvs", "textenvs.agents", "textenvs.evals", "textenvs.prompts")
    }
    found = []
    for scenario in textenvs.SCENARIOS:
        own = Path(importlib.import_module(package_of(scenario)).__file__).parent  # type: ignore[arg-type]
        facts = (f"{scenario.gym_name}-v{scenario.version}", scenario.title)
        for root in roots:
            for path in root.rglob("*.py"):
                if own in path.parents:
                    continue
                for line, text in code_words(path.read_text(encoding="utf-8")):
                    found += [f"{path}:{line}: {fact!r}" for fact in facts if fact in text]
    assert not found, "restated outside the scenario's declaration:\n" + "\n".join(found)
