"""The Inspect tasks: `textenvs/<scenario>` for each scenario, and `textenvs/all`.

Each task is written out with its own `@task` below, because `inspect list tasks`
finds tasks by reading source files for `@task` decorators (it does not look at
installed packages' entry points, which is how `inspect eval textenvs/<scenario>`
finds them). A test checks that this list matches the registry.

Task options (`-T`): `seeds` ("0-99"), `options` (reset options), `mode` ("play": the
textenvs solver plays each episode as `textenvs eval --agent llm` does; "tools": the
scenario is a tool-using environment for the agent given as the solver), `max_invalid`,
and the `llm` agent's conversation settings, each by its name in
`textenvs.agents.llm.conversation.CONVERSATION_SETTINGS` (`history_policy`,
`prompt_budget`, ...; the agent's defaults): the tasks pass every one of them on.
"""

from __future__ import annotations

from typing import Any, Literal

from inspect_ai import Task, task
from inspect_ai.agent import react
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.solver import Solver

import textenvs
from textenvs.adapters.inspect.scorer import episode_outcome
from textenvs.adapters.inspect.solver import play_episode
from textenvs.adapters.inspect.tools import env_command, start_episode
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.episodes.specs import Seeds, episode_specs
from textenvs.prompts import prompt_name, rules_text

DEFAULT_SEEDS = "0-99"
Mode = Literal["play", "tools"]
TOOLS_NOTE = (
    "Act by calling the `env_command` tool with one command at a time; it answers with "
    "what you observe next. Play until the episode is over."
)


def samples(
    env: str, seeds: Seeds, options: dict[str, Any] | None = None, mode: Mode = "play"
) -> list[Sample]:
    """One sample per episode; its input is the first observation (in tools mode, the
    scenario's rules, then the first observation)."""
    out = []
    for spec in episode_specs(env, seeds, options):
        first, _ = textenvs.make(spec.env).reset(seed=spec.seed, options=spec.options)
        if mode == "tools":
            rules = rules_text(prompt_name(spec.env, spec.options)).strip()
            first = f"{rules}\n\n{TOOLS_NOTE}\n\nFirst observation:\n{first}"
        metadata = {"env": spec.env, "seed": spec.seed, "options": spec.options}
        out.append(Sample(id=spec.id, input=first, metadata=metadata))
    return out


def scenario_task(
    env: str,
    seeds: Seeds = DEFAULT_SEEDS,
    options: dict[str, Any] | None = None,
    *,
    mode: Mode = "play",
    solver: Solver | None = None,
    max_invalid: int | None = None,
    **conversation: Any,
) -> Task:
    """An Inspect task over `env` (a scenario name or "all") and `seeds`. In tools mode
    `solver` is the agent that plays (default: `react()` with the `env_command` tool).
    `conversation` is the play solver's `llm` agent settings (`CONVERSATION_SETTINGS`),
    checked in either mode, so a misspelt `-T` name fails instead of being ignored."""
    if mode not in ("play", "tools"):
        raise ValueError(f"mode must be 'play' or 'tools', not {mode!r}")
    conversation_settings(**conversation)
    dataset = MemoryDataset(samples(env, seeds, options, mode), name=f"textenvs-{env}")
    if mode == "tools":
        return Task(
            dataset=dataset,
            setup=start_episode(),
            solver=solver or react(tools=[env_command()]),
            scorer=episode_outcome(),
            name=env,
        )
    return Task(
        dataset=dataset,
        solver=solver or play_episode(**conversation, max_invalid=max_invalid),
        scorer=episode_outcome(),
        name=env,
    )


@task(name="treasure-hunt")
def treasure_hunt(seeds: Seeds = DEFAULT_SEEDS, mode: Mode = "play", **settings: Any) -> Task:
    """textenvs treasure-hunt: one sample per seed (seeds like '0-99' or '3,7')."""
    return scenario_task("treasure-hunt", seeds, mode=mode, **settings)


@task(name="magnetic-field")
def magnetic_field(seeds: Seeds = DEFAULT_SEEDS, mode: Mode = "play", **settings: Any) -> Task:
    """textenvs magnetic-field: one sample per seed (seeds like '0-99' or '3,7')."""
    return scenario_task("magnetic-field", seeds, mode=mode, **settings)


@task(name="em-anomaly")
def em_anomaly(seeds: Seeds = DEFAULT_SEEDS, mode: Mode = "play", **settings: Any) -> Task:
    """textenvs em-anomaly: one sample per seed (seeds like '0-99' or '3,7')."""
    return scenario_task("em-anomaly", seeds, mode=mode, **settings)


@task(name="squad-recon")
def squad_recon(seeds: Seeds = DEFAULT_SEEDS, mode: Mode = "play", **settings: Any) -> Task:
    """textenvs squad-recon: one sample per seed (seeds like '0-99' or '3,7')."""
    return scenario_task("squad-recon", seeds, mode=mode, **settings)


@task(name="megacity")
def megacity(seeds: Seeds = DEFAULT_SEEDS, mode: Mode = "play", **settings: Any) -> Task:
    """textenvs megacity: one sample per seed (seeds like '0-99' or '3,7')."""
    return scenario_task("megacity", seeds, mode=mode, **settings)


@task(name="all")
def all_scenarios(seeds: Seeds = DEFAULT_SEEDS, mode: Mode = "play", **settings: Any) -> Task:
    """textenvs, every scenario: one sample per scenario and seed, scored per scenario."""
    return scenario_task("all", seeds, mode=mode, **settings)
