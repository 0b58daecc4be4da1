"""Rollouts: whole episodes played with the model, as the eval harness plays them, split
into what GRPO trains on."""

from __future__ import annotations

import pytest
import torch

import textenvs
from textenvs.agents.llm.conversation import Conversation, conversation_settings
from textenvs.episodes.loop import context_for
from textenvs.episodes.record import TURN_LIMIT
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference.chat import ChatTokens, GrowingChat, TemplateError
from textenvs.inference.generation import Sampling
from textenvs.training.rollouts import play

SAMPLING = Sampling(max_new_tokens=10, temperature=1.0)


def rollouts(tiny, specs, *, seed=0, max_turns=4, settings=None, make_env=textenvs.make):
    model, tokenizer = tiny
    return play(
        model,
        ChatTokens(tokenizer),
        specs,
        make_env,
        settings or conversation_settings(prompt_budget=7000),
        SAMPLING,
        max_turns=max_turns,
        generator=torch.Generator().manual_seed(seed),
    )


def test_a_rollout_is_the_conversation_eval_sends_with_only_the_replies_trained(tiny):
    _, tokenizer = tiny
    chat = ChatTokens(tokenizer)
    specs = [EpisodeSpec("treasure-hunt", seed) for seed in (3, 3, 4)]
    for rollout in rollouts(tiny, specs):
        result = rollout.result
        # the same episode again, its replies read by a fresh conversation as eval reads
        env = textenvs.make("treasure-hunt")
        observation, info = env.reset(seed=result.seed)
        conversation = Conversation.for_context(
            context_for(env, result.seed), conversation_settings(prompt_budget=7000)
        )
        ids = rollout.prompt_ids + rollout.completion_ids
        mask = [0] * len(rollout.prompt_ids) + rollout.env_mask
        replies = _runs(ids, mask)  # the model's tokens, reply by reply
        sampled = [chat.reply_text(reply) for reply in replies]
        for turn in result.turns:
            conversation.observe(observation, info)
            for _ in range(1 + turn.reasks):
                command = conversation.read(chat.reply_text(replies.pop(0)))
            assert command is not None and turn.command == command
            observation, _, _, _, info = env.step(command)
            assert turn.observation != observation or turn.invalid_action
        assert not replies
        # what the model read is what the conversation sends, rendered by the template,
        # with each reply as the model wrote it (a reply's surrounding whitespace, which
        # the conversation strips, stays in the sequence), up to the end of the last turn
        as_written = [
            {**m, "content": sampled.pop(0)} if m["role"] == "assistant" else m
            for m in conversation.transcript
        ]
        sent = chat.render(as_written, reply_next=False)
        read = chat.decode(ids)
        assert sent.startswith(read) and chat.reply_closer.endswith(sent[len(read) :])
        assert len(rollout.logprobs) == len(rollout.completion_ids)
        assert all(
            lp == 0.0 for lp, m in zip(rollout.logprobs, rollout.env_mask, strict=True) if not m
        )
        assert result.outcome in {TURN_LIMIT, "success", "failure"}


def _runs(ids: list[int], mask: list[int]) -> list[list[int]]:
    """The stretches of `ids` where `mask` is 1."""
    runs: list[list[int]] = []
    previous = 0
    for token, mine in zip(ids, mask, strict=True):
        if mine and not previous:
            runs.append([])
        if mine:
            runs[-1].append(token)
        previous = mine
    return runs


def test_episodes_differ_within_a_group_and_repeat_with_the_seed(tiny):
    specs = [EpisodeSpec("treasure-hunt", 5)] * 4
    first = [r.completion_ids for r in rollouts(tiny, specs, seed=1)]
    again = [r.completion_ids for r in rollouts(tiny, specs, seed=1)]
    assert first == again
    assert len({tuple(ids) for ids in first}) > 1  # a group GRPO can compare


def test_the_turn_limit_stops_training_episodes(tiny):
    (rollout,) = rollouts(tiny, [EpisodeSpec("treasure-hunt", 1)], max_turns=2)
    assert len(rollout.result.turns) <= 2
    if rollout.result.outcome == TURN_LIMIT:
        assert len(rollout.result.turns) == 2
        assert rollout.skills["expected_success"] is not None


def test_a_conversation_that_is_cut_is_refused(tiny):
    with pytest.raises(TemplateError, match="cut"):
        rollouts(
            tiny,
            [EpisodeSpec("treasure-hunt", 1)],
            max_turns=6,
            settings=conversation_settings(prompt_budget=900),
        )


def test_a_template_that_rewrites_earlier_turns_is_refused(tiny):
    _, tokenizer = tiny
    rewriting = tokenizer.__class__.from_pretrained(tokenizer.name_or_path)
    # keeps only the last assistant message (as templates that drop past thoughts do)
    rewriting.chat_template = (
        "{% for m in messages %}{% if m['role'] != 'assistant' or loop.last %}"
        "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    chat = ChatTokens(rewriting)
    sequence = GrowingChat(chat)
    first = [{"role": "system", "content": "rules"}, {"role": "user", "content": "obs 1"}]
    sequence.segment(first)
    sequence.replied("north", chat.encode("north<|im_end|>"))
    following = [*first, {"role": "assistant", "content": "north"}]
    with pytest.raises(TemplateError, match="rewrites"):
        sequence.segment([*following, {"role": "user", "content": "obs 2"}])
