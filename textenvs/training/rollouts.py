"""Play whole episodes with the model being trained: one rollout = one episode.

Every turn the model reads what `textenvs eval --agent llm` would send it (the
conversation of `agents/llm/conversation.py`: the rules prompt, the history, the
observation, a re-ask after an unreadable reply) and its reply is read the same way. The
episodes of a batch play in lockstep, so each turn's replies are sampled together
(`generation.Sequences`), and are recorded by the episode layer's bookkeeping
(`episodes.record`), as `textenvs eval` records its episodes.

A rollout is what GRPO trains on: the episode's token sequence split into the prompt
(rules and first observation) and the completion (every later token), with a mask that
is 1 on the model's own tokens and 0 on what the environment wrote (observations,
re-asks, the template's turn markers), and the sampled tokens' log-probabilities. It is
scored by `grpo.episode_reward` (the return, or the headline metric).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import PreTrainedModel

from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.conversation import Conversation
from textenvs.core.registry import episode_level
from textenvs.episodes.envs import EnvFactory, EpisodeEnv
from textenvs.episodes.loop import context_for
from textenvs.episodes.protocol import Decision
from textenvs.episodes.record import TURN_LIMIT, EpisodeResult
from textenvs.episodes.specs import EpisodeSpec
from textenvs.evals import skills
from textenvs.inference.chat import ChatTokens, GrowingChat
from textenvs.inference.generation import Grammar, Reply, Sampling, Sequences
from textenvs.training.samplers import Sampler


@dataclass
class Rollout:
    """One played episode, as the eval runner records it and as GRPO trains on it."""

    result: EpisodeResult
    prompt_ids: list[int]
    completion_ids: list[int]
    #: 1 on the model's tokens, 0 on the environment's
    env_mask: list[int]
    logprobs: list[float]
    #: replies cut by the token limit before they ended
    cut_replies: int = 0
    skills: dict[str, Any] = field(default_factory=dict)

    @property
    def reward(self) -> float:
        return self.result.total_reward


@dataclass
class Timing:
    """Where a batch's time went (seconds)."""

    generation: float = 0.0
    environment: float = 0.0


class _Episode:
    """One episode in play: its env, conversation and growing token sequence."""

    def __init__(
        self,
        spec: EpisodeSpec,
        env: EpisodeEnv,
        chat: ChatTokens,
        settings: LLMConfig,
        max_turns: int | None,
    ) -> None:
        self.spec = spec
        self.env = env
        self.max_turns = max_turns
        context = context_for(env, spec.seed, spec.options)
        self.conversation = Conversation.for_context(context, settings)
        self.sequence = GrowingChat(chat)
        level = episode_level(env.name, spec.options, getattr(env, "level", None))
        self.result = EpisodeResult(env=spec.env, seed=spec.seed, agent="policy", level=level)
        self.started = 0.0
        self.ids: list[int] = []
        self.model_mask: list[int] = []
        self.logprobs: list[float] = []
        self.prompt_length = 0
        self.cut_replies = 0
        self.observation = ""
        self.info: dict[str, Any] = {}
        self.done = False
        #: the turn in progress's token counts, as a server reports them to `eval`, and
        #: its seconds waiting for replies (sampled with the batch's)
        self.usage: dict[str, int] = {}
        self.latency_s = 0.0
        #: (sampled tokens to take back, tokens to read instead) before the next segment
        self.rewrite: tuple[int, list[int]] | None = None

    def start(self) -> None:
        self.started = time.perf_counter()
        self.observation, self.info = self.env.reset(seed=self.spec.seed, options=self.spec.options)
        self.conversation.observe(self.observation, self.info)

    def next_segment(self, chat: ChatTokens) -> list[int]:
        text = self.sequence.segment(self.conversation.request())
        ids = chat.encode(text)
        if not self.ids:
            self.prompt_length = len(ids)
        self.ids += ids
        self.model_mask += [0] * len(ids)
        self.logprobs += [0.0] * len(ids)
        return ids

    def grammar(self, chat: ChatTokens) -> Grammar | None:
        """What holds the next reply to its form (json mode), or None (text)."""
        schema = self.conversation.response_schema
        return None if schema is None else chat.json_grammars().for_schema(schema)

    def take_reply(self, chat: ChatTokens, reply: Reply, seconds: float) -> str | None:
        """Record the model's reply, sampled in `seconds`; the command to step, or None
        after a re-ask. Only the tokens the model chose are trained on (not those a
        grammar forced)."""
        # the prompt's size, as a server counts it for `eval`'s agent, which estimates the
        # next prompts by it (and so cuts history when eval would)
        self.conversation.sent(len(self.ids))
        counts = {
            "prompt_tokens": len(self.ids),
            "completion_tokens": len(reply.ids),
            "requests": 1,
        }
        self.usage = {k: self.usage.get(k, 0) + v for k, v in counts.items()}
        self.latency_s += seconds
        self.ids += reply.ids
        self.model_mask += [int(chosen) for chosen in reply.chosen]
        self.logprobs += reply.logprobs
        self.cut_replies += not reply.ended
        written = chat.reply_text(reply.ids)
        command = self.conversation.read(written, finish_reason="stop" if reply.ended else "length")
        kept = self.conversation.transcript[-1 if command is not None else -2]["content"]
        ids = reply.ids
        if kept != written:  # the conversation stripped whitespace: read the reply as kept
            ids = chat.encode(kept) + reply.ids[-1:] * reply.ended
            del self.ids[-len(reply.ids) :], self.model_mask[-len(reply.ids) :]
            del self.logprobs[-len(reply.ids) :]
            self.ids += ids
            self.model_mask += [1] * len(ids)
            self.logprobs += [math.nan] * len(ids)  # not sampled in this form
            self.rewrite = (len(reply.ids), ids)
        self.sequence.replied(kept, ids)
        return command

    def step(self, command: str, raw: str) -> None:
        reasks = self.conversation.asked  # this turn's
        decision = Decision(command, raw, reasks, self.usage, self.latency_s)
        self.usage, self.latency_s = {}, 0.0
        shown = self.observation
        self.result.decided(decision)
        stepped = self.env.step(command)
        self.observation, self.info = stepped[0], stepped[4]
        if self.result.stepped(shown, decision, stepped):
            self.finish()
        elif self.max_turns is not None and len(self.result.turns) >= self.max_turns:
            self.result.outcome = TURN_LIMIT
            self.finish()
        else:
            self.conversation.observe(self.observation, self.info)

    def finish(self) -> None:
        self.conversation.finish(self.info)
        self.result.ended(self.observation, self.info)
        self.result.wall_s = time.perf_counter() - self.started
        self.done = True

    def rollout(self) -> Rollout:
        cut = self.prompt_length
        return Rollout(
            result=self.result,
            prompt_ids=self.ids[:cut],
            completion_ids=self.ids[cut:],
            env_mask=self.model_mask[cut:],
            logprobs=self.logprobs[cut:],
            cut_replies=self.cut_replies,
            skills=skills.measure(self.spec.env, self.spec.seed, self.result.to_dict()),
        )


def play(
    model: PreTrainedModel,
    chat: ChatTokens,
    specs: Sequence[EpisodeSpec],
    make_env: EnvFactory,
    settings: LLMConfig,
    sampling: Sampling,
    *,
    max_turns: int | None = None,
    generator: torch.Generator | None = None,
    timing: Timing | None = None,
    sampler: Sampler | None = None,
) -> list[Rollout]:
    """Play one episode per spec, all in lockstep; their rollouts in the same order.
    Replies come from `sampler` (`samplers.py`: e.g. TRL's vLLM generation), by default
    from `model` through transformers, one cache kept across turns."""
    timing = timing if timing is not None else Timing()
    episodes: list[_Episode] = []
    try:
        started = time.perf_counter()
        for spec in specs:
            episode = _Episode(spec, make_env(spec.env), chat, settings, max_turns)
            episodes.append(episode)
            episode.start()
        timing.environment += time.perf_counter() - started
        sequences = sampler or Sequences(
            model,
            len(episodes),
            stop_ids=chat.stop_ids,
            pad_id=chat.tokenizer.pad_token_id,
            generator=generator,
        )
        while live := [i for i, episode in enumerate(episodes) if not episode.done]:
            sequences.keep(live)  # drop the rows of episodes that ended last turn
            segments = {i: episodes[i].next_segment(chat) for i in live}
            for i in live:
                if episodes[i].rewrite is not None:
                    taken_back, instead = episodes[i].rewrite
                    sequences.rewind(i, taken_back)
                    segments[i] = instead + segments[i]
                    episodes[i].rewrite = None
            grammars = {i: g for i in live if (g := episodes[i].grammar(chat)) is not None}
            started = time.perf_counter()
            replies = sequences.extend_and_sample(segments, sampling, grammars)
            sampled = time.perf_counter() - started
            timing.generation += sampled
            started = time.perf_counter()
            for i in live:
                episode = episodes[i]
                command = episode.take_reply(chat, replies[i], sampled)
                if command is not None:
                    episode.step(command, episode.conversation.transcript[-1]["content"])
            timing.environment += time.perf_counter() - started
        return [episode.rollout() for episode in episodes]
    finally:
        for episode in episodes:
            episode.env.close()
