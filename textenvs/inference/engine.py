"""The checkpoint server's engine: the chat requests of the episodes in flight, answered together.

The engine keeps one cache row ("slot") per conversation, so a request that extends a
slot's last prompt feeds only its new tokens (as prefix-caching servers do), and the
replies of one round are sampled in one batch, the round's new tokens packed into one
sequence with no padding (`ragged.RaggedSequences`); a round waits for the conversations
of the last rounds (`LOCKSTEP_WAIT_S`). A request that extends no slot takes the slot
used longest ago and keeps the tokens it shares with the slot's last conversation (the
rules every episode of a scenario starts with). In json mode the tokens the schema forces
(all of a reply but the command) are read in one pass with the tokens before them, not
sampled one pass each. All conversations' keys and values stay within a budget
(`budget.py`): past it, new conversations wait their turn.
"""

from __future__ import annotations

import concurrent.futures
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from transformers import PreTrainedModel

from textenvs.inference import budget, ragged
from textenvs.inference.chat import ChatTokens
from textenvs.inference.generation import Sampling

#: how long the engine waits for more requests to join a round (seconds)
ROUND_WAIT_S = 0.02
#: how long it waits for the clients of the last rounds: clients in lockstep come back
#: together, and a round costs the whole batch's attention however few rows it feeds,
#: so a round started early costs a full round for a part of the work
LOCKSTEP_WAIT_S = 1.0
#: compact the cache when it is wider than its longest row by this fraction: every row
#: attends over the whole width, so each hidden column costs every row a column of work
COMPACT_SLACK = 0.25


class ContextOverflow(ValueError):
    def __init__(self, window: int, requested: int) -> None:
        super().__init__(
            f"This model's maximum context length is {window} tokens. However, you "
            f"requested {requested} tokens."
        )
        self.window = window
        self.requested = requested


@dataclass
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    cached_tokens: int = 0  # of the prompt, already in the slot (not fed again)


@dataclass
class _Request:
    prompt: str
    sampling: Sampling
    schema: dict[str, Any] | None = None
    future: concurrent.futures.Future[Completion] = field(default_factory=concurrent.futures.Future)


@dataclass
class _Slot(budget.Row):
    text: str = ""  # what the slot's row holds, as text
    #: the last reply as the client will send it back, to read before the next segment
    refeed: list[int] = field(default_factory=list)


class Engine:
    """Answers chat requests with `model`, batching the requests that arrive together."""

    def __init__(
        self,
        model: PreTrainedModel,
        chat: ChatTokens,
        *,
        slots: int = 8,
        context_window: int = 8192,
        seed: int = 0,
        cache_mb: int | None = None,
    ) -> None:
        self.chat = chat
        self.context_window = context_window
        self.slots = [_Slot() for _ in range(slots)]
        self.sequences = ragged.sequences_for(
            model, slots, stop_ids=chat.stop_ids, pad_id=chat.tokenizer.pad_token_id, seed=seed
        )
        mb = budget.default_mb(model.device) if cache_mb is None else cache_mb
        self.budget = budget.CacheBudget(mb * 2**20 // budget.bytes_per_token(model))
        #: new conversations the budget had no room for, in order of arrival
        self._waiting: list[_Request] = []
        self._queue: queue.Queue[_Request | None] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="textenvs-engine", daemon=True)
        self._thread.start()

    def complete(
        self,
        messages: list[dict[str, Any]],
        sampling: Sampling,
        schema: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        """The model's reply to `messages`, held to the JSON `schema` if one is given, with
        `tools` rendered by the chat template (blocks until it is sampled)."""
        if schema is not None:
            self.chat.json_grammars().for_schema(schema)  # a bad schema fails here
        prompt = self.chat.render(messages, reply_next=True, tools=tools)
        request = _Request(prompt, sampling, schema)
        self._queue.put(request)
        return request.future.result()

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)
        for request in self._waiting:
            request.future.set_exception(RuntimeError("the checkpoint server has stopped"))

    # ----- the engine's thread ------------------------------------------------------------

    def _serve(self) -> None:
        # the slots of the last two rounds: their clients will be back (two, so that
        # clients that fell into alternate rounds are gathered again)
        expected, last_rows = 1, set[int]()
        while True:
            batch, self._waiting = self._waiting, []  # the waiting go first
            if not batch or not last_rows:
                # wait for an arrival; when only the waiting are left, no longer than it
                # takes the rows of ended conversations to turn idle (no spinning)
                try:
                    arrival = self._queue.get(timeout=self.budget.idle_s / 4 if batch else None)
                except queue.Empty:
                    pass
                else:
                    if arrival is None:
                        self._waiting = batch  # close() answers them
                        break
                    batch.append(arrival)
            started = time.monotonic()
            while len(batch) < len(self.slots):
                wait = LOCKSTEP_WAIT_S if len(batch) < expected else ROUND_WAIT_S
                try:
                    request = self._queue.get(timeout=max(0.0, started + wait - time.monotonic()))
                except queue.Empty:
                    break
                if request is None:
                    self._queue.put(None)  # stop after this round
                    break
                batch.append(request)
            rows = set[int]()
            for group in _by_sampling(batch):
                try:
                    rows |= self._round(group)
                except Exception as exc:  # answer every request of the round, never hang
                    for request in group:
                        if not request.future.done():
                            request.future.set_exception(exc)
            for row in self.budget.to_empty(self._rows()):
                self._empty(row)
            budget.give_back_freed_heap()
            expected, last_rows = len(rows | last_rows), rows

    def _round(self, requests: list[_Request]) -> set[int]:
        """Answer `requests` together; the slots they took."""
        taken: dict[int, _Request] = {}
        segments: dict[int, list[int]] = {}
        for request in requests:
            row = self._slot_for(request.prompt, taken)
            slot = self.slots[row] if row is not None else None
            if slot and slot.text and request.prompt.startswith(slot.text):
                ids = slot.refeed + self.chat.encode(request.prompt[len(slot.text) :])
            else:
                prompt = self.chat.encode(request.prompt)
                if slot is None or not self.budget.admits(len(prompt), self._rows(), set(taken)):
                    self._waiting.append(request)
                    continue
                ids = self._start(row, prompt)
            requested = slot.tokens + len(ids) + request.sampling.max_new_tokens
            if requested > self.context_window:
                self._empty(row)
                request.future.set_exception(ContextOverflow(self.context_window, requested))
                continue
            taken[row] = request
            segments[row] = ids
            slot.text, slot.tokens, slot.refeed = request.prompt, slot.tokens + len(ids), []
        if not taken:
            return set()
        grammars = {
            row: self.chat.json_grammars().for_schema(request.schema)
            for row, request in taken.items()
            if request.schema is not None
        }
        replies = self.sequences.extend_and_sample(
            segments, requests[0].sampling, grammars, fast_forward=True
        )
        for row, request in taken.items():
            reply = replies[row]
            slot = self.slots[row]
            prompt_tokens = slot.tokens
            cached = prompt_tokens - len(segments[row])
            written = self.chat.reply_text(reply.ids)
            self._keep_as_sent_back(row, written, reply.ids, reply.ended)
            slot.used = time.monotonic()
            request.future.set_result(
                Completion(
                    text=written,
                    prompt_tokens=prompt_tokens,
                    completion_tokens=len(reply.ids),
                    finish_reason="stop" if reply.ended else "length",
                    cached_tokens=cached,
                )
            )
        if self.sequences.width() > (1 + COMPACT_SLACK) * self.sequences.longest():
            self.sequences.compact()
        return set(taken)

    def _rows(self) -> dict[int, budget.Row]:
        return dict(enumerate(self.slots))

    def _empty(self, row: int) -> None:
        """Empty `row`: its conversation, if it comes back, starts again."""
        self.sequences.restart(row)
        self.slots[row] = _Slot()

    def _start(self, row: int, ids: list[int]) -> list[int]:
        """Start a conversation in `row`, keeping the tokens it shares with the row's last
        one (the rules and the system prompt, the same for every episode of a
        scenario); the ids left to read."""
        held = self.sequences.tokens[row]
        shared, most = 0, min(len(held), len(ids) - 1)  # read at least one token
        while shared < most and held[shared] == ids[shared]:
            shared += 1
        if not shared:
            self.sequences.restart(row)
        elif shared < len(held):
            self.sequences.rewind(row, len(held) - shared)
        slot = self.slots[row]
        slot.text, slot.tokens, slot.refeed = "", shared, []
        slot.started = time.monotonic()
        return ids[shared:]

    def _keep_as_sent_back(self, row: int, written: str, ids: list[int], ended: bool) -> None:
        """Hold the reply as the client's next request will carry it: clients keep a
        reply without its surrounding whitespace (the `llm` agent does), so a reply that
        had some is taken back and read again as kept, and the next request extends the
        slot instead of starting it over (training reads replies the same way)."""
        slot = self.slots[row]
        kept = written.strip()
        stop = ids[-1:] if ended else []
        if kept == written:
            slot.text += self.chat.decode(ids)
            slot.tokens += len(ids)
            return
        self.sequences.rewind(row, len(ids))
        slot.refeed = self.chat.encode(kept) + stop  # read with the next segment
        slot.text += kept + self.chat.decode(stop)

    def _slot_for(self, prompt: str, taken: dict[int, _Request]) -> int | None:
        """The free slot whose text the prompt extends furthest, else the one used longest
        ago (None: every slot is taken this round)."""
        free = [row for row in range(len(self.slots)) if row not in taken]
        if not free:
            return None
        extended = [
            row for row in free if self.slots[row].text and prompt.startswith(self.slots[row].text)
        ]
        if extended:
            return max(extended, key=lambda row: len(self.slots[row].text))
        return min(free, key=lambda row: self.slots[row].used)


def _by_sampling(batch: list[_Request]) -> list[list[_Request]]:
    groups: dict[tuple[Any, ...], list[_Request]] = {}
    for request in batch:
        s = request.sampling
        groups.setdefault((s.max_new_tokens, s.temperature, s.top_p, s.top_k), []).append(request)
    return list(groups.values())
