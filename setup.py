"""Package layout: `agents/`, `evals/` and `prompts/` install under the single top-level
name `textenvs` (as `textenvs.agents`, ...), so the wheel never squats generic names."""

from setuptools import find_packages, setup

MAPPED = {"textenvs.agents": "agents", "textenvs.evals": "evals", "textenvs.prompts": "prompts"}


def _packages() -> list[str]:
    found = find_packages(include=["textenvs", "textenvs.*"])
    for name, folder in MAPPED.items():
        found += [name] + [f"{name}.{sub}" for sub in find_packages(folder)]
    return found


setup(packages=_packages(), package_dir=MAPPED)
