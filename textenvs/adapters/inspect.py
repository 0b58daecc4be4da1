"""Inspect adapter (`pip install 'textenvs[inspect]'`): every scenario as an Inspect task.

    inspect eval textenvs/treasure-hunt --model openai/gpt-4o-mini -T seeds=0-49
    inspect eval textenvs/all --model openai-api/vllm/Qwen3-8B -T seeds=0-9

Tasks are registered through the `inspect_ai` entry point as `textenvs/<scenario>` (one
per scenario in the registry) and `textenvs/all`. A sample is one episode: (scenario,
seed[, reset options]); its input is the first observation. The solver plays the
episode through `textenvs.evals.episode.run_episode`, the same runner `textenvs eval`
uses, with an agent that asks Inspect's active model: the scenario's system prompt,
the last `history` turns, the observation as a user message, and the `llm` agent's
reading rules (the scenario parser; an unreadable reply is re-asked `reasks` times with
the parser's message, then stepped anyway, which wastes the turn). A model error that
Inspect's own retries could not cure fails the sample (so `--retry-on-error` and
eval-set retries apply) instead of being scored. The scorer reports success, return,
steps and invalid commands per episode, with means and standard errors.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

import textenvs
from textenvs.adapters.episodes import (
    EpisodeSpec,
    Seeds,
    episode_scores,
    episode_specs,
    reask_text,
)
from textenvs.agents.base import Agent, Decision, EpisodeContext
from textenvs.core.parsing import ParseError
from textenvs.evals.episode import EpisodeResult, run_episode
from textenvs.prompts import system_prompt

RESULT_KEY = "textenvs_result"  # where the solver leaves the episode summary (TaskState.store)
SCORE_KEYS = ("success", "return", "steps", "invalid_actions")
DEFAULT_SEEDS = "0-99"


def samples(env: str, seeds: Seeds, options: dict[str, Any] | None = None) -> list[Sample]:
    """One sample per episode; its input is the episode's first observation."""
    out = []
    for spec in episode_specs(env, seeds, options):
        first, _ = textenvs.make(spec.env).reset(seed=spec.seed, options=spec.options)
        metadata = {"env": spec.env, "seed": spec.seed, "options": spec.options}
        out.append(Sample(id=spec.id, input=first, metadata=metadata))
    return out


class InspectModelAgent(Agent):
    """A textenvs agent whose replies come from an Inspect model; every message it
    exchanges is also appended to `transcript` (the sample's messages in the log)."""

    name = "inspect"

    def __init__(
        self, model: Model, transcript: list[ChatMessage], *, history: int, reasks: int
    ) -> None:
        self.model = model
        self.transcript = transcript
        self.reasks = reasks
        self._history: deque[list[ChatMessage]] = deque(maxlen=history)
        self._system: ChatMessage = ChatMessageSystem(content="")
        #: a model error, raised again after the episode so Inspect sees the failure
        self.failure: BaseException | None = None
        self.last_output: ModelOutput | None = None

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        self._system = ChatMessageSystem(content=system_prompt(context.env_name))
        self._history.clear()
        self.transcript[:] = [self._system]

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        turn: list[ChatMessage] = [ChatMessageUser(content=observation)]
        reply, asked = "", 0
        try:
            for asked in range(self.reasks + 1):
                past = [m for exchange in self._history for m in exchange]
                self.last_output = await self.model.generate([self._system, *past, *turn])
                reply = self.last_output.completion
                turn.append(self.last_output.message)
                try:
                    self.context.parse(reply)
                    break
                except ParseError as exc:
                    if asked < self.reasks:
                        text = reask_text(exc, info.get("valid_commands", []))
                        turn.append(ChatMessageUser(content=text))
        except Exception as exc:  # run_episode would score it as agent_error
            self.failure = exc
            raise
        finally:
            self._history.append(turn)
            self.transcript.extend(turn)
        return Decision(reply, raw=reply, reasks=asked)


@solver
def play_episode(history: int = 8, reasks: int = 1, max_invalid: int | None = None) -> Solver:
    """Play the sample's episode to its end with the active model."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        spec = EpisodeSpec(
            state.metadata["env"], int(state.metadata["seed"]), state.metadata.get("options")
        )
        model = get_model()
        agent = InspectModelAgent(model, state.messages, history=history, reasks=reasks)
        env = textenvs.make(spec.env)
        try:
            result = await run_episode(
                env, agent, spec.seed, options=spec.options, max_invalid=max_invalid
            )
        finally:
            env.close()
        if agent.failure is not None:
            raise agent.failure
        state.store.set(
            RESULT_KEY, result.summary() | {"final_observation": result.final_observation}
        )
        state.output = agent.last_output or ModelOutput.from_content(model.name, "")
        state.completed = True
        return state

    return solve


@scorer(metrics={key: [mean(), stderr()] for key in SCORE_KEYS})
def episode_outcome() -> Scorer:
    """Success (0/1), return, steps and invalid commands of the episode the solver played;
    the answer is the outcome (`success`, `failure`, `timeout`, `invalid_limit`)."""

    async def score(state: TaskState, target: Target) -> Score:
        data = state.store.get(RESULT_KEY)
        if data is None:
            raise RuntimeError("no textenvs episode in this sample: use the play_episode solver")
        result = EpisodeResult(**{k: v for k, v in data.items() if k != "final_observation"})
        explanation = (
            f"{result.outcome}: return {result.total_reward:g}, {result.steps} steps, "
            f"{result.invalid_actions} invalid commands\n\n{data['final_observation']}"
        )
        return Score(
            value=episode_scores(result),
            answer=result.outcome,
            explanation=explanation,
            metadata={"outcome": result.outcome, "error": result.error},
        )

    return score


def scenario_task(
    env: str,
    seeds: Seeds = DEFAULT_SEEDS,
    options: dict[str, Any] | None = None,
    history: int = 8,
    reasks: int = 1,
    max_invalid: int | None = None,
) -> Task:
    """An Inspect task over `env` (a scenario name or "all") and `seeds`."""
    dataset = MemoryDataset(samples(env, seeds, options), name=f"textenvs-{env}")
    return Task(
        dataset=dataset,
        solver=play_episode(history=history, reasks=reasks, max_invalid=max_invalid),
        scorer=episode_outcome(),
        name=env,
    )


def _register(env: str) -> None:
    def make_task(
        seeds: Seeds = DEFAULT_SEEDS,
        options: dict[str, Any] | None = None,
        history: int = 8,
        reasks: int = 1,
        max_invalid: int | None = None,
    ) -> Task:
        return scenario_task(env, seeds, options, history, reasks, max_invalid)

    make_task.__name__ = env.replace("-", "_")
    make_task.__doc__ = f"textenvs {env}: one sample per seed (seeds like '0-99' or '3,7')."
    task(name=env)(make_task)


for _name in [*textenvs.names(), "all"]:
    _register(_name)
