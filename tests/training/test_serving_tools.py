"""Function calling on the checkpoint server: a model whose template renders tools (as
TRL trains one through `textenvs.adapters.trl`) is served with the request's tools, its
`<tool_call>` replies come back as OpenAI tool calls, and `textenvs eval --action-mode
tools` plays it."""

from __future__ import annotations

import json

import openai
import pytest
from transformers import AutoTokenizer

import textenvs
from textenvs.cli import main
from textenvs.inference import serving
from textenvs.inference.tool_calls import split_reply

from .conftest import REPLIES

#: the tool as TRL declares `TextenvsEnvironment.act` (from its signature and docstring)
ACT = {
    "type": "function",
    "function": {
        "name": "act",
        "description": "Send one command to the environment.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "One command."}},
            "required": ["command"],
        },
    },
}
#: a whole observation: the tiny model reads only its last tokens, which must be one
START = [
    {"role": "system", "content": "You play Treasure Hunt."},
    {"role": "user", "content": textenvs.make("treasure-hunt").reset(seed=0)[0]},
]


@pytest.fixture(scope="module")
def tool_endpoint(tool_caller_dir):
    with serving.serve(str(tool_caller_dir), slots=2) as url:
        yield openai.OpenAI(base_url=url, api_key="unused", max_retries=0)


def ask(client: openai.OpenAI, messages: list, **options) -> openai.types.chat.ChatCompletion:
    return client.chat.completions.create(model="tiny", messages=messages, **options)


@pytest.mark.slow
def test_a_reply_that_calls_a_tool_comes_back_as_a_tool_call(tool_endpoint, tool_caller_dir):
    first = ask(tool_endpoint, START, tools=[ACT], temperature=0, max_tokens=60)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and not choice.message.content
    (call,) = choice.message.tool_calls
    assert call.function.name == "act" and call.id.startswith("call_")
    arguments = json.loads(call.function.arguments)
    assert arguments["command"] in REPLIES
    # the next turn, as the agent sends it: the call with its arguments as JSON text, and
    # its answer; the template is given the arguments as an object, as it writes them
    history = [
        *START,
        {"role": "assistant", "content": "", "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": START[1]["content"]},
    ]
    second = ask(tool_endpoint, history, tools=[ACT], temperature=0, max_tokens=60)
    assert second.choices[0].message.tool_calls
    tokenizer = AutoTokenizer.from_pretrained(tool_caller_dir)
    rendered = [*history[:2], {**history[2], "tool_calls": [
        {"type": "function", "function": {"name": "act", "arguments": arguments}}
    ]}, history[3]]  # fmt: skip
    expected = tokenizer.apply_chat_template(rendered, tools=[ACT], add_generation_prompt=True)
    expected = expected["input_ids"] if hasattr(expected, "keys") else expected
    assert second.usage.prompt_tokens == len(expected)
    # without tools the template shows none: the prompt is shorter
    plain = ask(tool_endpoint, START, temperature=0, max_tokens=60)
    assert plain.usage.prompt_tokens < first.usage.prompt_tokens


def test_tools_the_server_cannot_honour_are_refused(tool_endpoint):
    with pytest.raises(openai.BadRequestError, match="tool_choice"):
        ask(tool_endpoint, START, tools=[ACT], tool_choice="required")
    with pytest.raises(openai.BadRequestError, match="'type': 'function'"):
        ask(tool_endpoint, START, tools=[{"type": "function", "function": {}}])


def test_only_well_formed_calls_are_taken_out_of_the_text():
    text = 'Going.\n<tool_call>\n{"name": "act", "arguments": {"command": "north"}}\n</tool_call>'
    content, (call,) = split_reply(text + "\n<tool_call>\nnot json\n</tool_call>")
    assert content == "Going.\n\n<tool_call>\nnot json\n</tool_call>"
    assert call["function"] == {"name": "act", "arguments": '{"command": "north"}'}
    assert split_reply("Action: north") == ("Action: north", [])


@pytest.mark.slow
def test_eval_in_tools_mode_plays_a_checkpoint_that_calls_act(tool_caller_dir, tmp_path):
    run = tmp_path / "tools"
    # greedy: what a sampled reply holds depends on how the server batches requests
    code = main(
        ["eval", "--env", "treasure-hunt", "--agent", "llm", "--model", str(tool_caller_dir),
         "--action-mode", "tools", "--seeds", "0-1", "--out", str(run), "--max-invalid", "3",
         "--temperature", "0"]
    )  # fmt: skip
    assert code == 0
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    assert len(records) == 2
    turns = [
        turn
        for record in records
        for turn in json.loads((run / record["trajectory"]).read_text())["turns"]
    ]
    commands = [turn["command"] for turn in turns if not turn.get("invalid_action")]
    # the model's calls of act(command) were read as the scenario's commands
    assert commands and set(commands) <= set(REPLIES)
    assert sum(r["invalid_actions"] for r in records) < len(turns)
