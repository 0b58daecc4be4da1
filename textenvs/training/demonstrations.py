"""Demonstrations for a supervised warm start: another agent's episodes, written as the
conversation the model itself will be in.

An agent (the scripted one by default: it reads only what the observation shows) plays
each seed; its commands are then replayed through the conversation `textenvs eval
--agent llm` holds (`agents/llm/conversation.py`: the same rules prompt, history and
observation form), each command written as the reply the rules teach (`Action:
<command>`) and read back by the same reader, so a demonstration is exactly a sequence
the model could have produced, token for token, in text action mode. Only the replies'
tokens are trained on (the labels of the rest are -100), as GRPO trains only the model's
own tokens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from textenvs.agents import make_agent
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.conversation import Conversation
from textenvs.episodes.loop import context_for, run_episode
from textenvs.episodes.record import EpisodeResult
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference.chat import ChatTokens, GrowingChat
from textenvs.training.rollouts import EnvFactory

#: the label of a token not trained on (the loss ignores it)
IGNORED = -100


@dataclass
class Demonstration:
    """One episode as training tokens: `labels` is `ids` on the replies, IGNORED elsewhere."""

    spec: EpisodeSpec
    result: EpisodeResult
    ids: list[int]
    labels: list[int]


def reply_for(command: str) -> str:
    """The reply the rules prompt teaches for `command`."""
    return f"Action: {command}"


def demonstrate(
    spec: EpisodeSpec,
    agent_name: str,
    make_env: EnvFactory,
    settings: LLMConfig,
    chat: ChatTokens,
) -> Demonstration:
    """`agent_name`'s episode of `spec`, as the model's conversation in tokens."""
    env = make_env(spec.env)
    try:
        result = asyncio.run(
            run_episode(env, make_agent(agent_name), spec.seed, options=spec.options)
        )
        commands = [turn.command for turn in result.turns]
        conversation = Conversation.for_context(context_for(env, spec.seed, spec.options), settings)
        sequence = GrowingChat(chat)
        stop = next(token for token in chat.encode(chat.reply_closer) if token in chat.stop_ids)
        ids: list[int] = []
        labels: list[int] = []
        observation, info = env.reset(seed=spec.seed, options=spec.options)
        for command in commands:
            conversation.observe(observation, info)
            segment = chat.encode(sequence.segment(conversation.request()))
            reply = reply_for(command)
            read = conversation.read(reply)
            if read is None:
                raise ValueError(f"{spec.id}: the reader does not read {reply!r}")
            reply_ids = [*chat.encode(reply), stop]
            sequence.replied(reply, reply_ids)
            ids += segment + reply_ids
            labels += [IGNORED] * len(segment) + reply_ids
            observation, _, _, _, info = env.step(read)
        conversation.finish(info)
        return Demonstration(spec, result, ids, labels)
    finally:
        env.close()


def demonstrations(
    specs: Sequence[EpisodeSpec],
    agent_name: str,
    make_env: EnvFactory,
    settings: LLMConfig,
    chat: ChatTokens,
    *,
    only_success: bool = False,
    on_episode: Callable[[Demonstration], Any] | None = None,
) -> list[Demonstration]:
    """One demonstration per spec (with `only_success`, those of won episodes only)."""
    kept: list[Demonstration] = []
    for spec in specs:
        demonstration = demonstrate(spec, agent_name, make_env, settings, chat)
        if on_episode is not None:
            on_episode(demonstration)
        if demonstration.result.success or not only_success:
            kept.append(demonstration)
    return kept
