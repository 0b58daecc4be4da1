"""No import cycle among the package's modules, counting the imports made inside
functions (a lazy import only defers a cycle; it still ties the two modules together).
`TYPE_CHECKING` blocks and `__main__` guards never run on import, so they do not count."""

from __future__ import annotations

import ast
from pathlib import Path

import textenvs

ROOT = Path(textenvs.__file__).parent.parent
#: where each installed package's files are (setup.py maps these three into textenvs)
FOLDERS = {
    "textenvs.agents": ROOT / "agents",
    "textenvs.evals": ROOT / "evals",
    "textenvs.prompts": ROOT / "prompts",
    "textenvs": ROOT / "textenvs",
}


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for prefix, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.setdefault(".".join([prefix, *parts]), path)
    return found


def never_runs(node: ast.If) -> bool:
    test = ast.unparse(node.test)
    return "TYPE_CHECKING" in test or "__main__" in test


def imports(path: Path, module: str, known: dict[str, Path]) -> set[str]:
    """The package's modules `path` imports wherever it runs them."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and never_runs(child):
                continue
            if isinstance(child, ast.Import):
                names.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - child.level + 1])
                    base = f"{base}.{child.module}" if child.module else base
                # `from package import module` imports the module, not the package's names
                names.update(
                    f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in child.names
                )
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    found = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def reached(start: str, graph: dict[str, set[str]]) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
    return seen


def test_no_module_imports_itself_through_others() -> None:
    known = modules()
    graph = {module: imports(path, module, known) for module, path in known.items()}
    in_cycles = sorted(module for module in graph if module in reached(module, graph))
    assert not in_cycles, in_cycles


def test_the_check_sees_a_lazy_cycle(tmp_path: Path) -> None:
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("def f():\n    from textenvs.second import g\n")
    second.write_text("import textenvs.first\n")
    known = {"textenvs.first": first, "textenvs.second": second}
    assert imports(first, "textenvs.first", known) == {"textenvs.second"}
    assert imports(second, "textenvs.second", known) == {"textenvs.first"}
