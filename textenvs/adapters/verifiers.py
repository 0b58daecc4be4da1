"""verifiers adapter (`pip install 'textenvs[verifiers]'`; `verifiers.v1` as shipped in
verifiers 0.3.1 and 0.4): the scenarios as a verifiers taskset, for verifiers' eval CLI
and the trainers that load verifiers environments.

    eval textenvs --env.taskset.env treasure-hunt --env.taskset.split eval -m MODEL ...

(`eval` is verifiers 0.3's v1 eval command; from 0.4 it is `vf-eval`.)

verifiers loads a taskset by its id: `textenvs` is this package, whose `__all__` exports
the three classes below (`environments/textenvs_env`, the standalone module, exports the
same ones as `textenvs-env`):

- `TextenvsTaskset`: one task per episode (scenario, seed, reset options) of its train
  split (`seeds`) or eval split (`eval_seeds`); the task's prompt is the scenario's
  system prompt and the first observation.
- `TextenvsHarness`, the taskset's own harness: it plays the task's episode with
  `textenvs eval`'s episode runner, and builds every request with the `llm` agent's
  conversation code (`agents/llm/conversation.py`: the same history policy, budget, re-asks
  and reading as `textenvs eval --agent llm`), so the model is sent the same messages.
  Each request goes to the model through the rollout's interception endpoint, so
  verifiers records every call (messages, tokens, sampling) as for any harness. Its
  config fields are the conversation settings (`--env.agent.harness.history 3`).
- `TextenvsEnv`: the single-agent env, its harness on the local runtime by default (it
  runs in this process and executes nothing).

Why the episode loop is a harness: verifiers' request hooks (`@vf.intercept`) may only
rewrite new user or tool messages, never drop past ones, so a stock harness that keeps
the whole conversation could not send the window or the budget cuts. A harness owns
its conversation, and verifiers supports one that runs in-process as long as every
model call goes through the interception endpoint.

Rewards and metrics come from the played episode, which the harness leaves in
`trace.info["textenvs"]` (scores, outcome, per-step rewards, final observation).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import openai
import verifiers.v1 as vf
from pydantic import Field, create_model, model_validator

from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.conversation import (
    CONVERSATION_SETTINGS,
    Conversation,
    conversation_settings,
    episode_system_prompt,
    system_for,
)
from textenvs.core.registry import make
from textenvs.episodes.loop import run_episode
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext
from textenvs.episodes.record import EpisodeResult
from textenvs.episodes.specs import EpisodeSpec, episode_specs
from textenvs.prompts import prompt_name

EPISODE_KEY = "textenvs"  # the played episode in `trace.info`
TASKSET_ID = "textenvs"
Reward = Literal["return", "success"]
Seeds = str | int | list[int]


class TextenvsData(vf.TaskData):
    """One episode: a scenario, a seed and the reset options."""

    env: str
    seed: int
    options: dict[str, Any] = Field(default_factory=dict)


class TextenvsTaskConfig(vf.TaskConfig):
    reward: Reward = "return"
    """The reward: the episode return, or success (0/1)."""


def played(trace: vf.Trace) -> dict[str, Any]:
    """The episode the harness left on `trace`."""
    episode = trace.info.get(EPISODE_KEY)
    if episode is None:
        raise vf.TaskError("no textenvs episode on this trace: the textenvs harness plays it")
    return episode


class TextenvsTask(vf.Task[TextenvsData, vf.State, TextenvsTaskConfig]):
    @property
    def key(self) -> str:
        """The episode's durable id ("em-anomaly-3"), kept in `data.name`."""
        return self.data.name or super().key

    @vf.metric
    async def episode_scores(self, trace: vf.Trace) -> dict[str, float]:
        """success, return, steps and invalid_actions, as `textenvs eval` scores them."""
        return played(trace)["scores"]

    @vf.reward
    async def episode_reward(self, trace: vf.Trace) -> dict[str, float]:
        name = self.config.reward
        return {name: played(trace)["scores"][name]}


class TextenvsConfig(vf.TasksetConfig):
    env: str = "all"
    """A scenario, a comma list, or "all"."""
    seeds: Seeds = "0-99"
    """The train split's seeds ("0-99", "3,7", ...)."""
    eval_seeds: Seeds = "1000-1019"
    """The eval split's seeds (not trained on)."""
    split: Literal["train", "eval"] = "train"
    options: dict[str, Any] = Field(default_factory=dict)
    """Reset options of a single scenario (e.g. {"level": 2})."""
    task: TextenvsTaskConfig = TextenvsTaskConfig()

    def specs(self, split: str | None = None) -> list[EpisodeSpec]:
        seeds = self.seeds if (split or self.split) == "train" else self.eval_seeds
        return episode_specs(self.env, seeds, self.options or None)

    @model_validator(mode="after")
    def _known_episodes(self) -> TextenvsConfig:
        for split in ("train", "eval"):  # bad names, seeds or options fail here, once
            self.specs(split)
        return self


def default_system_prompt(
    env: str, options: dict[str, Any], settings: LLMConfig | None = None
) -> str:
    """A task's system prompt, unless a taskset file overrides it: the episode's rules as
    the harness plays them (`settings`, by default the conversation's defaults)."""
    settings = settings or conversation_settings()
    return episode_system_prompt(prompt_name(env, options), settings)


class TextenvsTaskset(vf.Taskset[TextenvsTask, TextenvsConfig]):
    def load(self) -> Iterator[TextenvsTask]:
        for spec in self.config.specs():
            env = make(spec.env)
            first, _ = env.reset(seed=spec.seed, options=spec.options)
            env.close()
            data = TextenvsData(
                name=spec.id,
                prompt=first,
                system_prompt=default_system_prompt(spec.env, spec.options or {}),
                env=spec.env,
                seed=spec.seed,
                options=spec.options or {},
            )
            yield TextenvsTask(data, self.config.task)


class ConversationConfig(vf.HarnessConfig):
    """A harness config whose fields include the conversation settings."""

    def settings(self) -> LLMConfig:
        return conversation_settings(
            **{name: getattr(self, name) for name in CONVERSATION_SETTINGS}
        )

    @model_validator(mode="after")
    def _valid_settings(self) -> ConversationConfig:
        self.settings()  # validated as `textenvs eval` validates them
        return self


#: one field per conversation setting, typed as the `llm` agent types it (None: its default)
TextenvsHarnessConfig = create_model(
    "TextenvsHarnessConfig",
    __base__=ConversationConfig,
    __module__=__name__,
    **{
        name: (LLMConfig.model_fields[name].annotation | None, None)
        for name in CONVERSATION_SETTINGS
    },
)


class InterceptedModel(Agent):
    """A textenvs agent that asks the model through an OpenAI-protocol client with the
    `llm` agent's conversation. A failed model call is kept in `failure` (the episode
    runner would only record it as the outcome `agent_error`)."""

    name = "verifiers"

    def __init__(self, client: openai.AsyncOpenAI, model: str, system: str | None,
                 settings: LLMConfig) -> None:  # fmt: skip
        self.client = client
        self.model = model
        self.system = system
        self.settings = settings
        self.conversation: Conversation | None = None
        self.failure: Exception | None = None

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        system = self.system or system_for(context, self.settings)
        self.conversation = Conversation(system, self.settings, context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        conversation = self.conversation
        assert conversation is not None
        conversation.observe(observation, info)
        try:
            while True:
                response = await self.client.chat.completions.create(
                    model=self.model,
                    messages=conversation.request(),  # type: ignore[arg-type]
                )
                conversation.sent(response.usage.prompt_tokens if response.usage else 0)
                choice = response.choices[0]
                reply = choice.message.content or ""
                command = conversation.read(
                    reply, finish_reason=choice.finish_reason, refusal=choice.message.refusal
                )
                if command is not None:
                    return Decision(command, raw=reply, reasks=conversation.asked)
        except Exception as exc:
            self.failure = exc
            raise


def episode_record(result: EpisodeResult) -> dict[str, Any]:
    """What a trace keeps of its episode (`trace.info["textenvs"]`)."""
    return {
        "scores": result.scores(),
        "level": result.level,
        "outcome": result.outcome,
        "error": result.error,
        "reasks": result.reasks,
        "step_rewards": [turn.reward for turn in result.turns],
        "final_observation": result.final_observation,
    }


class TextenvsHarness(vf.Harness[TextenvsHarnessConfig]):  # type: ignore[valid-type]
    """Plays a task's episode in this process; see the module docstring."""

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(self, ctx: vf.ModelContext, trace: vf.Trace, runtime: vf.Runtime,
                     endpoint: str, secret: str, mcp_urls: dict[str, str],
                     data: vf.TaskData) -> vf.ProgramResult:  # fmt: skip
        if not isinstance(data, TextenvsData):
            raise vf.HarnessError("the textenvs harness plays textenvs tasks only")
        async with openai.AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0) as client:
            settings = self.config.settings()
            # the system prompt as loaded, where a taskset `system_prompt` file overrode
            # it; else the rules as this harness plays them (its re-asks)
            system = data.system_prompt
            if system == default_system_prompt(data.env, data.options):
                system = default_system_prompt(data.env, data.options, settings)
            agent = InterceptedModel(client, ctx.model, system, settings)
            env = make(data.env)
            try:
                result = await run_episode(env, agent, data.seed, options=data.options or None)
            finally:
                env.close()
        if agent.failure is not None and trace.stop_condition is None:
            raise agent.failure  # not a verifiers limit: the rollout fails (and may retry)
        trace.info[EPISODE_KEY] = episode_record(result)
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")


class TextenvsEnvConfig(vf.SingleAgentEnvConfig):
    agent: vf.AgentConfig = vf.AgentConfig(
        harness=TextenvsHarnessConfig(id=TASKSET_ID), runtime=vf.SubprocessConfig()
    )
    """The one seat: the textenvs harness (so `--env.agent.harness.history 3` needs no
    harness id), on the local runtime (it needs no sandbox)."""


class TextenvsEnv(vf.SingleAgentEnv, vf.Env[TextenvsEnvConfig]):
    """The single-agent env with a local default runtime."""


def load_environment(
    env: str = "all",
    seeds: Seeds = "0-99",
    eval_seeds: Seeds = "1000-1019",
    split: Literal["train", "eval"] = "train",
    reward: Reward = "return",
    *,
    taskset: str = TASKSET_ID,
    **kwargs: Any,
) -> TextenvsEnv:
    """The verifiers env over `env` (a scenario, a comma list, or "all"): the taskset's
    `split` ("train": `seeds`, "eval": `eval_seeds`), rewarded with the episode return or
    success. Keyword arguments named in `CONVERSATION_SETTINGS` (`history_policy`,
    `prompt_budget`, `history`, ...) are the harness's conversation settings, with the
    `llm` agent's defaults (the append policy within a 24,000-token prompt budget, one
    re-ask); the others are the scenario's reset options (e.g. `level=2`). `taskset` is
    the id verifiers loads it by (`textenvs`, or `textenvs-env` for the standalone
    module)."""
    settings = {key: value for key, value in kwargs.items() if key in CONVERSATION_SETTINGS}
    options = {key: value for key, value in kwargs.items() if key not in CONVERSATION_SETTINGS}
    config = vf.resolve_env_config(
        {
            "taskset": {"id": taskset, "env": env, "seeds": seeds, "eval_seeds": eval_seeds,
                        "split": split, "options": options, "task": {"reward": reward}},
            "agent": {"harness": settings},
        }
    )  # fmt: skip
    return vf.load_environment(config)  # type: ignore[return-value]
