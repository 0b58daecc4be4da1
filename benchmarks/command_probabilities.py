"""What checkpoints put on each EM Anomaly command at the states runs reached.

    python -m benchmarks.command_probabilities --models runs/sft-em/final,runs/or3c/final \\
        runs/or1-play runs/or2-play

Replays the runs' episodes (those whose every reply was read) in the conversation
`textenvs train --history 0` trains on (each turn its own prompt, the EM Anomaly
recipe's), and at each state where the reactive agent (`agents/scripted/reactive.py`)
would act for `--reason` (climb, by default: towards a higher reading) scores the seven
replies the rules teach (`Action: <command>`) under each model, exactly, from its
log-probabilities. Prints for each model the mean probability of the reactive agent's
command there, how often it is the likeliest of the seven, how much more it puts on a
command where it is the answer than where it is not (`reading_gap`: a model that moved
only its overall mix gains none), the mean kl over the seven (renormalised) from the first
model, each command's mean share of the seven and, where the
last move was blocked (`--reason turn`), the mean share of that move again (a bump): what a
training run moved at those states, where counting sampled commands
(`benchmarks/reading_counts.py`) needs a 40-minute evaluation and sees only large moves.
SmolLM2-135M on 2 cores: about 1.6 s a state and model (the rules prompt fed once).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import DynamicCache, PreTrainedModel

import textenvs
from benchmarks.reading_counts import ENV, replayed_observations
from textenvs.agents.llm import context
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.agents.scripted.reactive import em_anomaly_decision
from textenvs.evals import store
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens
from textenvs.scenarios.em_anomaly.state import Action
from textenvs.training.demonstrations import (
    IGNORED,
    RecordedEpisode,
    recorded_episodes,
    replayed_demonstrations,
    reply_for,
)

COMMANDS = [action.value for action in Action]
REASONS = ("mark", "climb", "straight", "turn")
#: the reply budget `textenvs train` samples EM Anomaly replies under (`--max-tokens 8`)
REPLY_TOKENS = 8


@dataclass(frozen=True)
class State:
    """A state a run reached: the prompt the model read there, the reactive agent's
    command, and the move that was blocked on the turn before (None: none was)."""

    prompt: list[int]
    answer: str
    blocked: str | None = None


def states_of(
    episodes: Sequence[RecordedEpisode],
    chat: ChatTokens,
    budget: int,
    reason: str,
    limit: int | None = None,
) -> list[State]:
    """The first `limit` (None: all) states of `episodes` where the reactive agent acts
    for `reason`, each with the prompt (its turn's sequence up to the reply) of a
    conversation keeping no earlier turn. Episodes are replayed only until there are
    enough."""
    settings = conversation_settings("text", 0, prompt_budget=budget, reasks=0, history=0)
    env = textenvs.make(ENV)
    states: list[State] = []
    for episode in episodes:
        if limit is not None and len(states) >= limit:
            break
        [demonstration] = replayed_demonstrations([episode], textenvs.make, settings, chat)
        observations = replayed_observations(env, episode.spec.seed, episode.commands)
        for sequence, observation in zip(demonstration.sequences, observations, strict=True):
            answer, why = em_anomaly_decision(observation)
            if why == reason:
                start = next(i for i, label in enumerate(sequence.labels) if label != IGNORED)
                blocked = observation["last_result"].startswith("blocked")
                move = observation["last_action"] if blocked else None
                states.append(State(sequence.ids[:start], answer, move))
    return states[:limit]


def shared_opening(prompts: Sequence[list[int]]) -> int:
    """How many tokens every prompt opens with, one short of the shortest (the rules
    prompt: fed once a model)."""
    length = min(len(prompt) for prompt in prompts) - 1
    first = prompts[0]
    for prompt in prompts:
        while prompt[:length] != first[:length]:
            length -= 1
    return length


def cut_back(cache: DynamicCache, length: int) -> None:
    """Keep the first `length` tokens' keys and values (`crop` takes how many to drop)."""
    cache.crop(length - cache.get_seq_length())


def reply_logprobs(
    model: PreTrainedModel, states: Sequence[State], replies: Sequence[list[int]]
) -> Iterator[list[float]]:
    """Per state, the log-probability of each of `replies` (token ids) after its prompt:
    the shared opening fed once, each prompt's rest and each reply fed on its keys and
    values, cropped back after."""
    prompts = [state.prompt for state in states]
    opening = shared_opening(prompts)
    cache = DynamicCache()

    def fed(ids: list[int], last: int = 0) -> torch.Tensor:
        """The log-probabilities after each of `ids` (the `last` only, when given), fed on
        the cache (which keeps them)."""
        keeping = {models.cache_argument(model): cache, "use_cache": True}
        logits = model(input_ids=torch.tensor([ids]), logits_to_keep=last, **keeping).logits[0]
        return torch.log_softmax(logits.double(), -1)

    with torch.inference_mode():
        fed(prompts[0][:opening], last=1)
        for prompt in prompts:
            first = fed(prompt[opening:], last=1)[-1]
            scored = []
            for reply in replies:
                logprob = first[reply[0]].item()
                if len(reply) > 1:
                    later = fed(reply[:-1])
                    logprob += later.gather(1, torch.tensor(reply[1:])[:, None]).sum().item()
                    cut_back(cache, len(prompt))
                scored.append(logprob)
            cut_back(cache, opening)
            yield scored


@dataclass
class Summary:
    """What a model puts on the reactive agent's command at the states, on average."""

    answer_probability: float
    likeliest: int
    kl_from_first: float
    mass_on_commands: float
    #: the mean share of each command (`COMMANDS`' order) among the seven
    mean_shares: list[float]
    #: the mean share of the blocked move, again, where the last move was (None: nowhere)
    bump_share: float | None
    #: `reading_gap`: what the model reads of whatever sets the reactive agent's command
    reading_gap: float | None


def kl(reference: Sequence[float], shares: Sequence[float]) -> float:
    return sum(r * math.log(r / s) for r, s in zip(reference, shares, strict=True) if r)


def reading_gap(shares: Sequence[Sequence[float]], answers: Sequence[int]) -> float | None:
    """How much more a model puts on a command at the states where it is the reactive
    agent's than at the states where another is: per state, the answer's share minus that
    command's mean share at the other answers' states, averaged (None: every state has
    the same answer). About 0 for a model blind to what sets the answer (at climbing
    states, the scan); 1 for one that always gives it."""
    gaps = []
    for row, answer in zip(shares, answers, strict=True):
        elsewhere = [other[answer] for other, b in zip(shares, answers, strict=True) if b != answer]
        if elsewhere:
            gaps.append(row[answer] - sum(elsewhere) / len(elsewhere))
    return sum(gaps) / len(gaps) if gaps else None


def command_replies(chat: ChatTokens) -> list[list[int]]:
    """The seven replies the rules teach (`COMMANDS`' order), as tokens, each ended."""
    return [[*chat.encode(reply_for(command)), chat.reply_stop()] for command in COMMANDS]


def summaries(
    loaded: Iterable[PreTrainedModel], states: Sequence[State], chat: ChatTokens
) -> list[Summary]:
    """Each of the `loaded` models' summary at the states, the first the reference."""
    replies = command_replies(chat)
    answers = [COMMANDS.index(state.answer) for state in states]
    bumps = [(at, COMMANDS.index(s.blocked)) for at, s in enumerate(states) if s.blocked]
    reference: list[list[float]] = []
    found: list[Summary] = []
    for model in loaded:
        probabilities = [
            [math.exp(value) for value in scored]
            for scored in reply_logprobs(model, states, replies)
        ]
        shares = [[p / sum(ps) for p in ps] for ps in probabilities]
        reference = reference or shares
        pairs = list(zip(probabilities, shares, reference, answers, strict=True))
        found.append(
            Summary(
                answer_probability=sum(ps[a] for ps, _, _, a in pairs) / len(pairs),
                likeliest=sum(sh[a] == max(sh) for _, sh, _, a in pairs),
                kl_from_first=sum(kl(ref, sh) for _, sh, ref, _ in pairs) / len(pairs),
                mass_on_commands=sum(sum(ps) for ps, _, _, _ in pairs) / len(pairs),
                mean_shares=[sum(column) / len(shares) for column in zip(*shares, strict=True)],
                bump_share=sum(shares[at][c] for at, c in bumps) / len(bumps) if bumps else None,
                reading_gap=reading_gap(shares, answers),
            )
        )
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders of `textenvs eval`")
    p.add_argument(
        "--models",
        required=True,
        help="comma list of model directories; the first is the one the others are "
        "compared with (the starting checkpoint)",
    )
    p.add_argument("--reason", choices=REASONS, default="climb", help="the states scored")
    p.add_argument("--limit", type=int, help="score at most this many states (the first)")
    args = p.parse_args(argv)
    model_dirs = args.models.split(",")
    if args.limit is not None and args.limit < 1:
        p.error("--limit must be at least 1")
    for run in args.runs:
        if not (run / store.EPISODES).is_file():
            p.error(f"{run} is not a `textenvs eval` run folder (it has no {store.EPISODES})")
    for model_dir in model_dirs:
        if not models.is_model_dir(model_dir):
            p.error(f"--models: {model_dir} is not a model directory (no config.json)")
    first, tokenizer = models.load(model_dirs[0])

    def loaded() -> Iterator[PreTrainedModel]:
        """The models in turn, the first already loaded, each later one when it comes."""
        yield first
        for model_dir in model_dirs[1:]:
            yield models.load(model_dir)[0]

    chat = ChatTokens(tokenizer)
    budget = context.budget_under(models.context_window(first), REPLY_TOKENS)
    episodes, _ = recorded_episodes(args.runs, ENV)
    try:
        states = states_of(episodes, chat, budget, args.reason, args.limit)
    except ValueError as exc:  # a run of another version of the scenario
        p.error(str(exc).splitlines()[0])
    if not states:
        p.error(f"the runs reached no state where the reactive agent acts to {args.reason}")
    print(f"{len(states)} {args.reason} states of {len(episodes)} episodes")
    for model_dir, summary in zip(model_dirs, summaries(loaded(), states, chat), strict=True):
        gap = "" if summary.reading_gap is None else f"; reading gap {summary.reading_gap:+.3f}"
        print(
            f"{model_dir}: the reactive agent's command {summary.answer_probability:.3f} "
            f"(likeliest at {summary.likeliest}){gap}; kl from the first "
            f"{summary.kl_from_first:.4f}; on the seven commands {summary.mass_on_commands:.3f}"
        )
        mix = zip(COMMANDS, summary.mean_shares, strict=True)
        bump = (
            ""
            if summary.bump_share is None
            else f"; the blocked move again {summary.bump_share:.3f}"
        )
        print("  mean shares: " + ", ".join(f"{c} {share:.3f}" for c, share in mix) + bump)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
