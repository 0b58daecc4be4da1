"""A conversation as the token sequence a model reads, grown turn by turn.

`textenvs eval` sends a model the messages that `agents/llm/conversation.py` builds; a
model server renders them with the model's chat template. Training must show the model
exactly that text, yet sample each reply only once and train on the tokens it sampled.
So a sequence grows by segments: each segment is what the template adds to the rendered
conversation since the model's last reply (the end of that reply's turn, the next
observation, a re-ask, the opening of the next reply), and each reply is the model's own
tokens.

That needs a template under which a conversation only grows: rendering the messages of
turn k+1 starts with the rendering of turn k's messages. ChatML templates (SmolLM2,
Qwen2) are such templates; one that rewrites earlier turns (e.g. drops past reasoning)
is refused with `TemplateError`.

The reply a conversation keeps is the model's visible text, stripped of surrounding
whitespace (as `textenvs eval` keeps it), and that is what the model reads in later turns.
When a reply had such whitespace, the sequence holds the reply as kept, tokenized anew
(`rollouts` takes the sampled tokens back), so the prompts stay those eval sends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from transformers import PreTrainedTokenizerBase

if TYPE_CHECKING:
    from textenvs.inference.constrained import JsonGrammars

Message = dict[str, Any]
PROBE = "PROBE-REPLY"


class TemplateError(ValueError):
    """The chat template cannot render a conversation that only grows."""


class ChatTokens:
    """Renders messages with a tokenizer's chat template and tokenizes the new part."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        if not tokenizer.chat_template:
            raise TemplateError("the tokenizer has no chat template")
        self.tokenizer = tokenizer
        probe = [{"role": "user", "content": "u"}, {"role": "assistant", "content": PROBE}]
        rendered = self.render(probe, reply_next=False)
        opening = self.render(probe[:1], reply_next=True)
        if not rendered.startswith(opening + PROBE):
            raise TemplateError("the chat template does not end a prompt where the reply starts")
        #: what the template writes after a reply's text (e.g. "<|im_end|>\n")
        self.reply_closer = rendered[len(opening) + len(PROBE) :]
        self.stop_ids = stop_token_ids(tokenizer)
        self._json_grammars: JsonGrammars | None = None

    def json_grammars(self) -> JsonGrammars:
        """What holds json-mode replies to their schema (made on first use: it reads the
        whole vocabulary)."""
        if self._json_grammars is None:
            from textenvs.inference.constrained import JsonGrammars

            self._json_grammars = JsonGrammars(self.tokenizer)
        return self._json_grammars

    def render(
        self, messages: list[Message], *, reply_next: bool, tools: list[Message] | None = None
    ) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tools=tools, tokenize=False, add_generation_prompt=reply_next
        )

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False)

    def reply_stop(self) -> int:
        """The stop token that ends a reply as the template writes it (the first of its
        reply closer's tokens that stops)."""
        return next(token for token in self.encode(self.reply_closer) if token in self.stop_ids)

    def reply_text(self, ids: list[int]) -> str:
        """A sampled reply as the content a server would return (stop tokens dropped)."""
        return self.tokenizer.decode(
            [i for i in ids if i not in self.stop_ids], skip_special_tokens=True
        )


def stop_token_ids(tokenizer: PreTrainedTokenizerBase) -> set[int]:
    """The tokens that end a reply: the end-of-sequence token and the template's
    end-of-turn token when it has one."""
    stops = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    for token in ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>"):
        token_id = tokenizer.convert_tokens_to_ids(token)
        if isinstance(token_id, int) and token_id != tokenizer.unk_token_id:
            stops.add(token_id)
    return stops


class GrowingChat:
    """One conversation's sequence: the messages read so far and where the last reply
    ended."""

    def __init__(self, chat: ChatTokens, tools: list[Message] | None = None) -> None:
        self.chat = chat
        #: the tools every request of the conversation declares (rendered by the template)
        self.tools = tools
        #: the messages the model has read (and its replies to them)
        self.messages: list[Message] = []
        #: what of the template's reply closer the model has already written (its stop
        #: token), so the next segment adds only the rest
        self.closed = ""

    def extends(self, messages: list[Message]) -> bool:
        """Whether `messages` (a request) extends what the sequence holds."""
        return messages[: len(self.messages)] == self.messages

    def segment(self, messages: list[Message]) -> str:
        """The text to feed before the next reply, for the request `messages` (the whole
        conversation so far, as `Conversation.request()` returns it)."""
        previous = self.messages
        if not self.extends(messages):
            raise TemplateError(
                "the conversation was cut (its history no longer extends the last request); "
                "raise the prompt budget or lower the turn limit"
            )
        rendered = self.chat.render(messages, reply_next=True, tools=self.tools)
        if previous:
            replied = self.chat.render(previous, reply_next=False, tools=self.tools)
            if not rendered.startswith(replied):
                raise TemplateError("the chat template rewrites earlier turns")
            closer = self.chat.reply_closer
            text = closer[len(self.closed) :] + rendered[len(replied) :]
        else:
            text = rendered
        self.messages = list(messages)
        return text

    def replied(self, content: str, reply_ids: list[int], message: Message | None = None) -> None:
        """The model's reply was added to the conversation as `content` (or as `message`,
        e.g. one with tool calls), and the sequence holds it as `reply_ids`."""
        self.messages.append(message or {"role": "assistant", "content": content})
        ended = bool(reply_ids) and reply_ids[-1] in self.chat.stop_ids
        stop_text = self.chat.decode(reply_ids[-1:]) if ended else ""
        self.closed = stop_text if self.chat.reply_closer.startswith(stop_text) else ""
