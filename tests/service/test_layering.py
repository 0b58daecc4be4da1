"""The env server stands alone: `textenvs/service/` imports only the core, the prompts, the
package's face and itself (the play page and its recorder mount onto it from
`textenvs/play/`), and the play page's modules import one another without a circle."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import textenvs

PACKAGE = Path(textenvs.__file__).parent
SERVICE_MAY_IMPORT = ("textenvs.core", "textenvs.prompts", "textenvs.service")


def imported_modules(path: Path, package: str) -> set[str]:
    """Every `textenvs` module a file imports, anywhere in it (functions and
    `TYPE_CHECKING` blocks included), relative imports made absolute."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.add(module)
            # `from textenvs.play import record` imports the module `textenvs.play.record`
            found |= {f"{module}.{a.name}" for a in node.names if is_module(f"{module}.{a.name}")}
    return {name for name in found if name == "textenvs" or name.startswith("textenvs.")}


def is_module(name: str) -> bool:
    """Whether `name` is a module or package of the installed `textenvs`."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a name inside a module, not a module
        return False


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(path: Path) -> str:
    name = module_name(path)
    return name if path.name == "__init__.py" else name.rsplit(".", 1)[0]


def test_the_service_imports_only_the_core_the_prompts_and_itself() -> None:
    files = sorted((PACKAGE / "service").rglob("*.py"))
    assert len(files) > 10 and any(p.parent.name == "transport" for p in files)
    wrong = [
        f"{path.relative_to(PACKAGE)}: {module}"
        for path in files
        for module in sorted(imported_modules(path, package_of(path)))
        # `textenvs` alone is the package's face (`textenvs/__init__.py`)
        if module != "textenvs"
        and module not in SERVICE_MAY_IMPORT
        and not module.startswith(tuple(f"{p}." for p in SERVICE_MAY_IMPORT))
    ]
    assert not wrong, "service/ reaches above its layer:\n" + "\n".join(wrong)


def test_the_check_sees_an_import_from_above(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "from textenvs import __version__\n"
        "def later():\n    from textenvs.evals.runner import write_summary\n"
        "from textenvs.episodes import loop\n"
        "from textenvs import evals\n"
    )
    found = imported_modules(source, "textenvs.service")
    assert found == {
        "textenvs",
        "textenvs.evals",
        "textenvs.evals.runner",
        "textenvs.episodes",
        "textenvs.episodes.loop",
    }


def test_serving_imports_neither_the_eval_code_nor_the_episode_loop() -> None:
    """At run time too: the service app (and the play page without a recorder) load no
    eval code and no episode loop."""
    code = (
        "import sys, textenvs.service.app, textenvs.play.page\n"
        "print(' '.join(m for m in sys.modules if m.startswith("
        "('textenvs.evals', 'textenvs.episodes.loop', 'textenvs.play.record'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == []


def test_the_play_modules_import_one_another_without_a_circle() -> None:
    files = {module_name(p): p for p in (PACKAGE / "play").glob("*.py")}
    graph = {
        name: {m for m in imported_modules(path, package_of(path)) if m in files and m != name}
        for name, path in files.items()
    }
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, "import circle: " + " -> ".join((*path, name))
        if name not in done:
            for imported in graph[name]:
                visit(imported, (*path, name))
            done.add(name)

    for name in graph:
        visit(name, ())
    assert {"textenvs.play.episodes", "textenvs.play.players"} <= graph["textenvs.play.record"]
