"""Demonstrations for a supervised warm start: another agent's episodes, written as the
conversation the model itself will be in.

An agent (the scripted one by default: it reads only what the observation shows) plays
each seed; its commands are then replayed through the conversation `textenvs eval
--agent llm` holds (`agents/llm/conversation.py`: the same rules prompt, history and
observation form), each command written as the reply the rules teach (`Action:
<command>`) and read back by the same reader, so a demonstration is exactly what the
model could have produced, token for token, in text action mode. Only the replies' tokens
are trained on (the labels of the rest are -100), as GRPO trains only the model's own
tokens.

A conversation that only grows (the default history) is one sequence an episode; one
whose prompts drop earlier turns (`--history K`, a window) is one sequence a turn, each
the prompt eval sends that turn and the reply.

Most turns of an episode repeat the command before (going on straight), and a few decide
(turning at a wall, marking on a strong reading): `habit_share` keeps only that share of
the repeating turns' replies trained on (a fixed draw per seed and turn), so the
decisions the observation makes weigh more. A sequence left with nothing to train on is
dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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
class TokenSequence:
    """Training tokens: `labels` is `ids` on the replies, IGNORED elsewhere."""

    ids: list[int] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)


@dataclass
class Demonstration:
    """One episode as the sequences the model reads and writes in it."""

    spec: EpisodeSpec
    result: EpisodeResult
    sequences: list[TokenSequence]

    @property
    def tokens(self) -> int:
        return sum(len(sequence.ids) for sequence in self.sequences)

    @property
    def trained(self) -> int:
        """Its tokens trained on (the replies')."""
        return sum(label != IGNORED for s in self.sequences for label in s.labels)


def reply_for(command: str) -> str:
    """The reply the rules prompt teaches for `command`."""
    return f"Action: {command}"


def demonstrate(
    spec: EpisodeSpec,
    agent_name: str,
    make_env: EnvFactory,
    settings: LLMConfig,
    chat: ChatTokens,
    habit_share: float = 1.0,
) -> Demonstration:
    """`agent_name`'s episode of `spec`, as the model's conversation in tokens, with
    `habit_share` of the replies that repeat the command before trained on."""
    env = make_env(spec.env)
    try:
        result = asyncio.run(
            run_episode(env, make_agent(agent_name), spec.seed, options=spec.options)
        )
        commands = [turn.command for turn in result.turns]
        conversation = Conversation.for_context(context_for(env, spec.seed, spec.options), settings)
        growing: GrowingChat | None = None  # the sequence being written
        stop = next(token for token in chat.encode(chat.reply_closer) if token in chat.stop_ids)
        sequences: list[TokenSequence] = []
        observation, info = env.reset(seed=spec.seed, options=spec.options)
        draws = np.random.default_rng([spec.seed, len(commands)]).random(len(commands))
        for turn, command in enumerate(commands):
            trained = turn == 0 or command != commands[turn - 1] or draws[turn] < habit_share
            conversation.observe(observation, info)
            request = conversation.request()
            if growing is None or not growing.extends(request):  # the prompt was cut
                growing, sequence = GrowingChat(chat), TokenSequence()
                sequences.append(sequence)
            segment = chat.encode(growing.segment(request))
            reply = reply_for(command)
            read = conversation.read(reply)
            if read is None:
                raise ValueError(f"{spec.id}: the reader does not read {reply!r}")
            reply_ids = [*chat.encode(reply), stop]
            growing.replied(reply, reply_ids)
            sequence.ids += segment + reply_ids
            sequence.labels += [IGNORED] * len(segment)
            sequence.labels += reply_ids if trained else [IGNORED] * len(reply_ids)
            observation, _, _, _, info = env.step(read)
        conversation.finish(info)
        sequences = [s for s in sequences if any(label != IGNORED for label in s.labels)]
        return Demonstration(spec, result, sequences)
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
    habit_share: float = 1.0,
    on_episode: Callable[[Demonstration], Any] | None = None,
) -> list[Demonstration]:
    """One demonstration per spec (with `only_success`, those of won episodes only)."""
    kept: list[Demonstration] = []
    for spec in specs:
        demonstration = demonstrate(spec, agent_name, make_env, settings, chat, habit_share)
        if on_episode is not None:
            on_episode(demonstration)
        if demonstration.result.success or not only_success:
            kept.append(demonstration)
    return kept
