"""The solver that plays a sample's episode with Inspect's active model.

It plays through `textenvs.episodes.loop.run_episode`, the runner `textenvs eval` uses,
and builds every request with the `llm` agent's conversation (`agents/llm/conversation.py`:
the same system prompt, history policy and budget, re-asks and reply reading), so the
model is sent the same messages as under `textenvs eval --agent llm`. The sample's
messages in the log are that conversation as a reader sees it: each observation in a
code fence, so the viewer keeps grids in their columns (the model gets the plain text).
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver

import textenvs
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.conversation import Conversation, conversation_settings
from textenvs.episodes.loop import run_episode
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext, EpisodeEnd
from textenvs.episodes.specs import EpisodeSpec
from textenvs.evals.records import episode_record

RESULT_KEY = "textenvs_result"  # the episode record the solver leaves for the scorer
#: Inspect's stop reasons as the `llm` agent reads OpenAI's finish reasons
FINISH_REASONS = {"max_tokens": "length", "model_length": "length"}


def fenced(text: str) -> str:
    """`text` as a Markdown code block (the viewer renders messages as Markdown)."""
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}text\n{text}\n{fence}"


def to_inspect(message: dict[str, Any], *, display: bool = False) -> ChatMessage:
    """A chat message for Inspect; `display` fences user messages for the log."""
    content = message["content"]
    if message["role"] == "system":
        return ChatMessageSystem(content=content)
    if message["role"] == "assistant":
        return ChatMessageAssistant(content=content)
    return ChatMessageUser(content=fenced(content) if display else content)


def prompt_tokens(output: ModelOutput) -> int:
    """The prompt's tokens as the server counted them, cached ones included (what the
    `llm` agent reads from `usage.prompt_tokens`); 0 when unknown."""
    if output.input_context_tokens is not None:
        return output.input_context_tokens
    usage = output.usage
    if usage is None:
        return 0
    cached = (usage.input_tokens_cache_read or 0) + (usage.input_tokens_cache_write or 0)
    return usage.input_tokens + cached


class InspectModelAgent(Agent):
    """A textenvs agent whose replies come from an Inspect model; every message it
    exchanges is also appended to `transcript` (the sample's messages in the log)."""

    name = "inspect"

    def __init__(self, model: Model, transcript: list[ChatMessage], settings: LLMConfig) -> None:
        self.model = model
        self.transcript = transcript
        self.settings = settings
        self.conversation: Conversation | None = None
        #: a model error, raised again after the episode so Inspect sees the failure
        self.failure: BaseException | None = None
        self.last_output: ModelOutput | None = None

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        # the rules prompt of the episode's variant, as the llm agent picks it
        self.conversation = Conversation.for_context(context, self.settings)
        self.transcript[:] = [ChatMessageSystem(content=self.conversation.system["content"])]

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        conversation = self.conversation
        assert conversation is not None
        conversation.observe(observation, info)
        self.transcript.append(to_inspect(conversation.pending[0], display=True))
        try:
            while True:
                messages = conversation.request()
                output = await self.model.generate([to_inspect(m) for m in messages])
                self.last_output = output
                conversation.sent(prompt_tokens(output))
                finish = FINISH_REASONS.get(output.stop_reason, output.stop_reason)
                command = conversation.read(output.completion, finish_reason=finish)
                self.transcript.append(output.message)
                if command is not None:
                    return Decision(command, raw=output.completion, reasks=conversation.asked)
                self.transcript.append(to_inspect(conversation.pending[-1]))  # the re-ask
        except Exception as exc:  # run_episode would score it as agent_error
            self.failure = exc
            raise

    def end_episode(self, observation: str, info: dict[str, Any], end: EpisodeEnd) -> None:
        if self.conversation is not None:
            self.conversation.finish(info)
        self.transcript.append(ChatMessageUser(content=fenced(observation)))


@solver
def play_episode(max_invalid: int | None = None, **conversation: Any) -> Solver:
    """Play the sample's episode to its end with the active model. `conversation` takes
    the `llm` agent's conversation settings by name (`CONVERSATION_SETTINGS`, as in
    `textenvs eval --history-policy ...`), with its defaults: the append policy within
    a 24,000-token prompt budget, one re-ask. An unknown name is a ValueError."""
    settings = conversation_settings(**conversation)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        spec = EpisodeSpec(
            state.metadata["env"], int(state.metadata["seed"]), state.metadata.get("options")
        )
        model = get_model()
        agent = InspectModelAgent(model, state.messages, settings)
        env = textenvs.make(spec.env)
        try:
            result = await run_episode(
                env, agent, spec.seed, options=spec.options, max_invalid=max_invalid
            )
        finally:
            env.close()
        if agent.failure is not None:
            raise agent.failure
        record = episode_record(result, (spec.env, spec.seed, 0), model.name, "")
        state.store.set(RESULT_KEY, record | {"final_observation": result.final_observation})
        state.output = agent.last_output or ModelOutput.from_content(model.name, "")
        state.completed = True
        return state

    return solve
