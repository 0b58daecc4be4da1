"""The checkpoint server: an OpenAI-compatible endpoint on loopback, used through the
official `openai` client as the `llm` agent uses it."""

from __future__ import annotations

import concurrent.futures

import openai
import pytest

from textenvs.inference import serving
from textenvs.inference.generation import Sequences

SYSTEM = {"role": "system", "content": "You play Treasure Hunt."}


@pytest.fixture(scope="module")
def endpoint(tiny_dir):
    with serving.serve(str(tiny_dir), slots=4) as url:
        yield openai.OpenAI(base_url=url, api_key="unused", max_retries=0)


def ask(client: openai.OpenAI, messages: list[dict], **options) -> openai.types.chat.ChatCompletion:
    return client.chat.completions.create(model="tiny", messages=messages, **options)


def test_models_lists_the_context_the_agent_sizes_its_prompts_by(endpoint):
    (entry,) = endpoint.models.list().data
    assert entry.model_extra["max_model_len"] == 32768


def test_a_conversation_turn_by_turn_answers_as_a_fresh_request_would(endpoint, tiny_dir):
    messages = [SYSTEM, {"role": "user", "content": "Position: x=0, y=0"}]
    first = ask(endpoint, messages, temperature=0, max_tokens=8)
    reply = first.choices[0].message.content
    assert reply.startswith("Action:")
    assert first.usage.completion_tokens <= 8
    messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": "x=0, y=1"}]
    extended = ask(endpoint, messages, temperature=0, max_tokens=8)
    # the same request on a server that never saw the first turn reads it all afresh
    with serving.serve(str(tiny_dir), slots=1) as url:
        fresh = ask(openai.OpenAI(base_url=url, api_key="x"), messages, temperature=0, max_tokens=8)
    assert extended.choices[0].message.content == fresh.choices[0].message.content
    assert extended.usage.prompt_tokens == fresh.usage.prompt_tokens
    # only the new turn was fed: the rest is reported cached, as prefix-caching servers do
    assert fresh.usage.prompt_tokens_details.cached_tokens == 0
    cached = extended.usage.prompt_tokens_details.cached_tokens
    assert first.usage.prompt_tokens <= cached < extended.usage.prompt_tokens


def test_a_new_conversation_reuses_the_rules_it_shares_with_the_last_one(tiny_dir):
    with serving.serve(str(tiny_dir), slots=1) as url:
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0)
        first = [SYSTEM, {"role": "user", "content": "Position: x=0, y=0"}]
        reply = ask(client, first, temperature=0, max_tokens=8).choices[0].message.content
        turn = [{"role": "assistant", "content": reply}, {"role": "user", "content": "x=0, y=1"}]
        ask(client, first + turn, temperature=0, max_tokens=8)
        # another episode: the same system prompt, another observation
        second = [SYSTEM, {"role": "user", "content": "Position: x=5, y=2"}]
        shared = ask(client, second, temperature=0, max_tokens=8)
    with serving.serve(str(tiny_dir), slots=1) as url:
        fresh = ask(openai.OpenAI(base_url=url, api_key="x"), second, temperature=0, max_tokens=8)
    assert shared.choices[0].message.content == fresh.choices[0].message.content
    assert shared.usage.prompt_tokens == fresh.usage.prompt_tokens
    # the system prompt was not read again; the new observation was
    cached = shared.usage.prompt_tokens_details.cached_tokens
    assert 0 < cached < shared.usage.prompt_tokens


@pytest.mark.slow
def test_concurrent_conversations_each_get_their_own_answer(endpoint):
    conversations = [
        [SYSTEM, {"role": "user", "content": f"Position: x={i}, y={i}"}] for i in range(6)
    ]
    alone = [
        ask(endpoint, c, temperature=0, max_tokens=8).choices[0].message.content
        for c in conversations
    ]
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        together = list(
            pool.map(lambda c: ask(endpoint, c, temperature=0, max_tokens=8), conversations)
        )
    assert [t.choices[0].message.content for t in together] == alone


@pytest.mark.slow
def test_a_seeded_reply_is_drawn_the_same_alone_or_beside_others(endpoint):
    """A seeded request draws from its own generator: what shares its round, and what the
    server sampled before, change nothing (a resumed or concurrent sampling run)."""
    conversations = [
        [SYSTEM, {"role": "user", "content": f"Position: x={i}, y=2"}] for i in range(4)
    ]

    def sampled(c: list[dict], seed: int | None) -> str:
        reply = ask(endpoint, c, temperature=1.0, max_tokens=8, seed=seed)
        return reply.choices[0].message.content

    alone = [sampled(c, seed) for seed, c in enumerate(conversations)]
    sampled(conversations[0], None)  # the engine's own generator moves on
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        together = list(pool.map(sampled, conversations, range(4)))
    assert together == alone
    # another seed, another draw (the tiny model's replies are nearly uniform)
    assert [sampled(c, seed + 100) for seed, c in enumerate(conversations)] != alone


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"stream": True}, "stream"),
        ({"tools": [{"type": "function", "function": {"name": "act", "parameters": {}}}]}, "tools"),
        ({"response_format": {"type": "xml"}}, "response_format"),
        ({"n": 2}, "n"),
    ],
)
def test_what_it_cannot_do_is_refused_with_a_400_that_says_so(endpoint, options, named):
    with pytest.raises(openai.BadRequestError, match=named):
        ask(endpoint, [SYSTEM], **options)


def test_a_prompt_over_the_context_is_a_context_length_error(endpoint):
    too_long = [{"role": "user", "content": "north " * 40000}]
    with pytest.raises(openai.BadRequestError) as caught:
        ask(endpoint, too_long, max_tokens=8)
    assert caught.value.code == "context_length_exceeded"
    assert "maximum context length is 32768" in str(caught.value)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["json_schema", "json_object"])
def test_a_response_format_holds_the_reply_to_the_schema(endpoint, form):
    import json

    import textenvs
    from textenvs.agents.llm import json_mode

    schema = json_mode.response_schema(textenvs.make("treasure-hunt").action_schema, 0)
    messages = [SYSTEM, {"role": "user", "content": "Position: x=0, y=0"}]
    for seed in range(4):
        reply = (
            ask(
                endpoint,
                messages,
                temperature=1.0,
                seed=seed,
                response_format=json_mode.response_format(schema, form),
            )
            .choices[0]
            .message.content
        )
        assert json.loads(reply)["action"] in {"north", "south", "east", "west", "reveal", "wait"}


LONG = [SYSTEM, {"role": "user", "content": "Position: x=0, y=0 " * 40}]


def beside_a_long_conversation(model, tokenizer, slots: int, turns: int) -> tuple[Sequences, int]:
    """`LONG`, then a short conversation of `turns` turns, greedy on an engine of `slots`;
    the short one's last answer must be a fresh server's. The engine's sequences, and
    their width after `LONG`."""
    from textenvs.inference.chat import ChatTokens
    from textenvs.inference.generation import Sampling

    greedy = Sampling(max_new_tokens=8, temperature=0)
    engine = serving.Engine(model, ChatTokens(tokenizer), slots=slots)
    fresh = serving.Engine(model, ChatTokens(tokenizer), slots=1)
    try:
        engine.complete(LONG, greedy)
        long_width = engine.sequences.width()
        short = [SYSTEM, {"role": "user", "content": "Position: x=1"}]
        for turn in range(turns):
            reply = engine.complete(short, greedy).text
            asked = list(short)
            short += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": f"Position: x={turn}, y={turn}"},
            ]
        assert reply == fresh.complete(asked, greedy).text
    finally:
        engine.close()
        fresh.close()
    return engine.sequences, long_width


def test_a_waiting_long_conversation_costs_a_short_one_nothing(tiny):
    """A long conversation waits while a short one goes on alone: each row holds its own
    tokens only (`ragged.py`: no padding for the rows that sit a round out), and the
    answers are those of a fresh server."""
    model, tokenizer = tiny
    sequences, _ = beside_a_long_conversation(model, tokenizer, slots=2, turns=12)
    for row in range(2):
        assert sequences.lengths[row] + len(sequences.pending[row]) == len(sequences.tokens[row])
    assert sequences.width() == sequences.longest()


def test_other_model_families_share_one_padded_batch_compacted_as_rows_restart(
    tiny_dir, monkeypatch
):
    """A model family `ragged.py` does not know is served in one padded batch: a new
    conversation in a long one's row hides the long one's columns, the batch is compacted
    once it is wider than its longest row by `COMPACT_SLACK`, and the answers are those of
    a fresh server."""
    from textenvs.inference import models, ragged

    monkeypatch.setattr(ragged, "SUPPORTED", frozenset())
    model, tokenizer = models.load(str(tiny_dir))  # its own: the padded batch's attention
    sequences, long_width = beside_a_long_conversation(model, tokenizer, slots=1, turns=3)
    assert not isinstance(sequences, ragged.RaggedSequences)
    assert sequences.width() < long_width  # compacted: the long conversation's columns went
    assert sequences.width() <= (1 + serving.COMPACT_SLACK) * sequences.longest()
