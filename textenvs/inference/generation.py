"""Batched sampling from a causal language model, each sequence's cache kept across turns.

A multi-turn episode is one growing token sequence: rules and first observation, the
model's reply, the next observation, the next reply, ... Each turn adds a segment (the
new observation, rendered by the chat template) and samples a reply after it. Re-reading
the whole conversation every turn would cost a forward pass over thousands of tokens per
turn on a CPU, so `Sequences` keeps one key/value cache for a batch of sequences and
feeds each turn only what is new.

Sequences in a batch grow at different rates. Each call appends one block of columns to
the whole batch: a row's new tokens sit at the right of its block and the rest of the
block is padding that the attention mask hides (holes in the middle of a row are fine:
positions come from the mask, so a row's positions are exactly those of its tokens alone).
A row can sit a turn out: it then only gains hidden padding. Rows whose episodes have
ended are dropped (`keep`). Greedy decoding gives the same tokens as decoding each row
alone.

A reply may be held to a grammar (json action mode: `constrained.py`): at each token the
grammar says which tokens may come next and the others are never sampled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import torch
from transformers import PreTrainedModel

from textenvs.inference import models
from textenvs.inference.cache import InPlaceCache


@dataclass
class Sampling:
    """How replies are drawn."""

    max_new_tokens: int = 48
    #: 0 = greedy
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0


class Grammar(Protocol):
    """Holds one reply to a form (e.g. a JSON schema: `constrained.py`)."""

    def allowed(self, vocabulary: int) -> torch.Tensor:
        """A boolean mask over the vocabulary: the tokens that may come next."""
        ...

    def consume(self, token: int) -> None: ...

    def forced(self) -> list[int]:
        """The tokens the form leaves no choice about from here, consumed."""
        ...


@dataclass
class Reply:
    """One sampled reply: its tokens (ending with an end-of-turn token unless the token
    limit cut it), each token's log-probability under the model at the sampling
    temperature (before top-p/top-k and any grammar: what GRPO's trainer recomputes; NaN
    where `fast_forward` read a forced token unsampled), and whether the model chose it
    (False where a grammar left one token only)."""

    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    chosen: list[bool] = field(default_factory=list)
    ended: bool = False


class Sequences:
    """A batch of token sequences growing turn by turn, sharing one cache."""

    def __init__(
        self,
        model: PreTrainedModel,
        rows: int,
        *,
        stop_ids: set[int],
        pad_id: int,
        generator: torch.Generator | None = None,
    ) -> None:
        self.model = model
        self.device = model.device
        #: the row (as callers name it) at each place in the batch
        self.rows = list(range(rows))
        self.stop_ids = stop_ids
        self.pad_id = pad_id
        self.generator = generator
        self.cache = InPlaceCache()
        self.cache_argument = models.cache_argument(model)
        self.mask = torch.zeros((rows, 0), dtype=torch.long, device=self.device)
        #: each row's tokens in order (what the cache holds, plus `pending`)
        self.tokens: list[list[int]] = [[] for _ in range(rows)]
        #: a row's last sampled token, not yet fed to the model (it goes in first next time)
        self.pending: list[list[int]] = [[] for _ in range(rows)]

    @torch.inference_mode()
    def keep(self, rows: list[int]) -> None:
        """Drop every row not in `rows` from the batch (their episodes have ended)."""
        places = [self.rows.index(row) for row in rows]
        if len(places) == len(self.rows):
            return
        if self.mask.shape[1]:
            self.cache.batch_select_indices(torch.tensor(places, device=self.device))
            self.mask = self.mask[places]
        self.rows = list(rows)

    def restart(self, row: int) -> None:
        """Empty `row` for a new sequence: its old tokens stay in the cache, hidden."""
        self.rewind(row, len(self.tokens[row]))

    def rewind(self, row: int, count: int) -> None:
        """Take back `row`'s last `count` tokens (a reply to be read in another form):
        they stay in the cache, hidden, and the row goes on from before them."""
        cached = count - len(self.pending[row])  # the rest were never fed
        if cached > 0:
            self._forget(row, cached)
        del self.tokens[row][-count:]
        self.pending[row] = []

    @torch.inference_mode()
    def _forget(self, row: int, count: int) -> None:
        """Hide the last `count` tokens `row` has in the cache."""
        place = self.rows.index(row)
        columns = self.mask[place].nonzero().squeeze(-1)[-count:]
        self.mask[place, columns] = 0

    def holes(self) -> int:
        """Cache columns that no row reads (padding, and restarted rows' old tokens)."""
        return int(self.mask.numel() - self.mask.sum())

    def width(self) -> int:
        """The cache's columns: what every row attends over."""
        return int(self.mask.shape[1])

    def longest(self) -> int:
        """The most columns any row reads: the cache's width once compacted."""
        return int(self.mask.sum(dim=1).max()) if self.mask.numel() else 0

    @torch.inference_mode()
    def compact(self) -> None:
        """Drop hidden columns: each row keeps its own columns in order, right-aligned.
        Positions are baked into the cached keys and the next ones are counted from
        the mask, so nothing else changes."""
        width = self.longest()
        if width == self.mask.shape[1]:
            return
        index = torch.zeros((len(self.rows), width), dtype=torch.long, device=self.device)
        mask = torch.zeros((len(self.rows), width), dtype=torch.long, device=self.device)
        for place in range(len(self.rows)):
            kept = self.mask[place].nonzero().squeeze(-1)
            if len(kept):
                index[place, width - len(kept) :] = kept
                mask[place, width - len(kept) :] = 1
        self.cache.select_columns(index)
        self.mask = mask

    @torch.inference_mode()
    def extend_and_sample(
        self,
        segments: dict[int, list[int]],
        sampling: Sampling,
        grammars: dict[int, Grammar] | None = None,
        *,
        fast_forward: bool = False,
        generators: dict[int, torch.Generator] | None = None,
    ) -> dict[int, Reply]:
        """Append each row's segment and sample a reply after it (rows not in `segments`
        sit this call out), each row held to its grammar if it has one. Returns the
        replies by row.

        A row with its own generator in `generators` draws from it alone, so its reply
        does not depend on which other rows share the batch (a seeded request); the
        other rows draw from the batch's generator.

        With `fast_forward`, the tokens a grammar forces are read with the tokens before
        them in one pass, not sampled one pass each (most of a json reply's tokens: the
        checkpoint server's evaluations); they have no log-probability (NaN), so training,
        which keeps one for every token, samples them."""
        grammars = grammars or {}
        if not segments:
            return {}
        feeds = {row: self.pending[row] + list(ids) for row, ids in segments.items()}
        for row, ids in segments.items():
            if not self.pending[row] and not ids:
                raise ValueError(f"row {row}: nothing to read before sampling")
            self.tokens[row].extend(ids)
            self.pending[row] = []
        replies = {row: Reply() for row in segments}
        if fast_forward:
            for row in grammars.keys() & segments.keys():
                feeds[row] += self._force(row, grammars[row], replies[row], sampling)
        logits = self._feed(feeds)
        live = {
            row
            for row, reply in replies.items()
            if not reply.ended and len(reply.ids) < sampling.max_new_tokens
        }
        while live:
            allowed = self._allowed(logits, {row: grammars[row] for row in live if row in grammars})
            chosen, logprobs = self._sample(logits, allowed, sampling, generators or {})
            step: dict[int, list[int]] = {}
            for row in sorted(live):
                place = self.rows.index(row)
                token = int(chosen[place])
                reply = replies[row]
                reply.ids.append(token)
                reply.logprobs.append(float(logprobs[place]))
                reply.chosen.append(allowed is None or int(allowed[place].sum()) > 1)
                if row in grammars:
                    grammars[row].consume(token)
                self.tokens[row].append(token)
                unread = [token]
                if token in self.stop_ids:
                    reply.ended = True
                elif fast_forward and row in grammars:
                    unread += self._force(row, grammars[row], reply, sampling)
                if reply.ended or len(reply.ids) >= sampling.max_new_tokens:
                    # the reply's last tokens are not read yet: they go in with the next segment
                    self.pending[row] = unread
                else:
                    step[row] = unread
            live = set(step)
            if live:
                logits = self._feed(step)
        return replies

    def _draw(self, probs: torch.Tensor, generators: dict[int, torch.Generator]) -> torch.Tensor:
        """One token a place from `probs`: the places whose row has its own generator draw
        from it, the others together from the batch's."""
        own = {place: generators[row] for place, row in enumerate(self.rows) if row in generators}
        if not own:
            return torch.multinomial(probs, 1, generator=self.generator).squeeze(-1)
        chosen = torch.zeros(len(self.rows), dtype=torch.long)
        shared = [place for place in range(len(self.rows)) if place not in own]
        if shared:
            drawn = torch.multinomial(probs[shared], 1, generator=self.generator)
            chosen[shared] = drawn.squeeze(-1)
        for place, generator in own.items():
            chosen[place] = torch.multinomial(probs[place], 1, generator=generator)[0]
        return chosen

    def _force(self, row: int, grammar: Grammar, reply: Reply, sampling: Sampling) -> list[int]:
        """Append the tokens `grammar` forces to `row`'s reply, up to the reply's token
        limit; them (not read yet)."""
        room = sampling.max_new_tokens - len(reply.ids)
        ids = grammar.forced()[:room]
        reply.ids += ids
        reply.logprobs += [math.nan] * len(ids)
        reply.chosen += [False] * len(ids)
        reply.ended = bool(ids) and ids[-1] in self.stop_ids
        self.tokens[row] += ids
        return ids

    def _feed(self, feeds: dict[int, list[int]]) -> torch.Tensor:
        """Run the model over one block of new columns; the last column's logits."""
        width = max(len(ids) for ids in feeds.values())
        shape = (len(self.rows), width)
        block = torch.full(shape, self.pad_id, dtype=torch.long, device=self.device)
        block_mask = torch.zeros(shape, dtype=torch.long, device=self.device)
        for row, ids in feeds.items():
            if ids:
                place = self.rows.index(row)
                block[place, width - len(ids) :] = torch.tensor(ids, device=self.device)
                block_mask[place, width - len(ids) :] = 1
        self.mask = torch.cat([self.mask, block_mask], dim=1)
        # a row's positions count only its own tokens, so holes change nothing
        positions = (self.mask.cumsum(dim=1) - 1).clamp(min=0)[:, -width:]
        out = self.model(
            input_ids=block,
            attention_mask=self.mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self.cache_argument: self.cache},  # the cache grows in place
        )
        return out.logits[:, -1, :].float()

    def _allowed(self, logits: torch.Tensor, grammars: dict[int, Grammar]) -> torch.Tensor | None:
        """The tokens each place may sample next (None: any token, no grammar here)."""
        if not grammars:
            return None
        allowed = torch.ones(logits.shape, dtype=torch.bool, device=logits.device)
        for row, grammar in grammars.items():
            allowed[self.rows.index(row)] = grammar.allowed(logits.shape[-1]).to(logits.device)
        return allowed

    def _sample(
        self,
        logits: torch.Tensor,
        allowed: torch.Tensor | None,
        sampling: Sampling,
        generators: dict[int, torch.Generator],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The tokens drawn (among the allowed ones) and their log-probabilities under the
        model alone."""
        temperature = sampling.temperature if sampling.temperature > 0 else 1.0
        logprobs = torch.log_softmax(logits / temperature, dim=-1)
        if allowed is not None:
            logits = logits.masked_fill(~allowed, float("-inf"))
        if sampling.temperature <= 0:
            chosen = logits.argmax(dim=-1)
        else:
            scores = logits / sampling.temperature
            if sampling.top_k > 0:
                kth = torch.topk(scores, sampling.top_k, dim=-1).values[:, -1:]
                scores = scores.masked_fill(scores < kth, float("-inf"))
            if sampling.top_p < 1.0:
                ordered, order = torch.sort(scores, descending=True, dim=-1)
                cumulative = torch.softmax(ordered, dim=-1).cumsum(dim=-1)
                drop = cumulative - torch.softmax(ordered, dim=-1) > sampling.top_p
                ordered = ordered.masked_fill(drop, float("-inf"))
                scores = torch.full_like(scores, float("-inf")).scatter(-1, order, ordered)
            probs = torch.softmax(scores, dim=-1).cpu()
            chosen = self._draw(probs, generators).to(logits.device)
        return chosen, logprobs.gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
