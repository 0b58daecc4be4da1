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

In tools mode (`--action-mode tools`) the conversation is the one eval holds in tools
mode (its rules, `act` declared in every request, each call answered) and each command
is written as a call of `act(command)` as the model's chat template writes one: the call
TRL's `environment_factory` loop parses. Each is read back as eval reads a checkpoint's
reply (the server's tool calls, the agent's reader) before it is trained on.

A conversation that only grows (the default history) is one sequence an episode; one
whose prompts drop earlier turns (`--history K`, a window) is one sequence a turn, each
the prompt eval sends that turn and the reply.

Most turns of an episode repeat the command before (going on straight), and a few decide
(turning at a wall, marking on a strong reading): `habit_share` keeps only that share of
the repeating turns' replies trained on (a fixed draw per seed and turn), so the
decisions the observation makes weigh more. A sequence left with nothing to train on is
dropped.

A demonstrator never in trouble shows no way out of it: the reactive agent turns before
a wall, so a model that once walks into one has never seen what to do next.
`noise` plays a random command instead of the agent's on that share of the turns (a
fixed draw per seed), and every turn is trained on the agent's own answer, the random
turns too (DART: Laskey et al., 2017): the agent then answers the states that come of
them, walls included. A random turn's sequence ends with the agent's answer and the
conversation goes on, in a new sequence, with the command that was played. It suits a
memoryless agent best: one that tracks its own moves is misled by commands it did not
choose.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from openai.types.chat import ChatCompletionMessage

from textenvs.agents import make_agent
from textenvs.agents.llm.agent import act_tool
from textenvs.agents.llm.config import LLMConfig
from textenvs.agents.llm.conversation import Conversation
from textenvs.agents.llm.history import Message
from textenvs.agents.llm.reading import COMMAND_ARGUMENT, TOOL_NAME, read_message
from textenvs.episodes.envs import EnvFactory
from textenvs.episodes.loop import context_for, run_episode
from textenvs.episodes.protocol import Agent, Decision, EpisodeContext, EpisodeEnd
from textenvs.episodes.record import EpisodeResult
from textenvs.episodes.replay import ReplayedAgent
from textenvs.episodes.specs import EpisodeSpec
from textenvs.evals import store
from textenvs.evals.metrics import key_of
from textenvs.inference.chat import ChatTokens, GrowingChat
from textenvs.inference.tool_calls import call_text, reply_message, template_messages

#: the label of a token not trained on (the loss ignores it)
IGNORED = -100


@dataclass
class TokenSequence:
    """Training tokens: `labels` is `ids` on the replies, IGNORED elsewhere."""

    ids: list[int] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)

    @property
    def trained(self) -> int:
        """Its tokens trained on (the replies')."""
        return sum(label != IGNORED for label in self.labels)

    @property
    def longest_reply(self) -> int:
        """The most tokens of one reply trained on (its stop token included)."""
        longest = run = 0
        for label in self.labels:
            run = run + 1 if label != IGNORED else 0
            longest = max(longest, run)
        return longest


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
        return sum(sequence.trained for sequence in self.sequences)


class NoisyAgent(Agent):
    """Plays `agent`, but a random command on `noise` of the turns, and remembers the
    agent's own answer every turn."""

    def __init__(self, agent: Agent, noise: float, seed: int) -> None:
        self.agent, self.noise = agent, noise
        self.rng = np.random.default_rng([seed, 17])
        self.name = agent.name
        #: per turn, the command the agent chose (played or not)
        self.answers: list[str] = []

    def reset(self, context: EpisodeContext) -> None:
        super().reset(context)
        self.agent.reset(context)

    async def act(self, observation: str, info: dict[str, Any]) -> Decision:
        decision = await self.agent.act(observation, info)
        scrambled = self.noise > 0 and self.rng.random() < self.noise
        self.answers.append(decision.command)
        return Decision(self.context.random_command(info, self.rng)) if scrambled else decision

    def end_episode(self, observation: str, info: dict[str, Any], end: EpisodeEnd) -> None:
        self.agent.end_episode(observation, info, end)


@dataclass(frozen=True)
class RecordedEpisode:
    """An episode an eval run recorded: what replays it and how it ended."""

    spec: EpisodeSpec
    commands: tuple[str, ...]
    success: bool
    total_reward: float
    #: per turn, the reply as recorded where it could not be read (replayed as it was
    #: written, so a policy gradient can push it down), None where it was read; empty:
    #: every reply was read
    unread: tuple[str | None, ...] = ()
    #: per turn, the observation its reply answered, as recorded (`--credit turn`)
    observations: tuple[str, ...] = ()
    #: per turn, the command trained on in place of the one played (`--credit lookahead`),
    #: None where it is the one played; empty: none
    answers: tuple[str | None, ...] = ()


def recorded_runs(demonstrations: str) -> list[Path]:
    """The `textenvs eval` run folders (each with an episodes file) that `demonstrations`
    names, a comma list; empty when it names something else (an agent)."""
    runs = [Path(part) for part in demonstrations.split(",")]
    return runs if all((run / store.EPISODES).is_file() for run in runs) else []


def recorded_episodes(
    runs: Sequence[Path],
    env: str,
    options: dict[str, Any] | None = None,
    *,
    keep_unreadable: bool = False,
) -> tuple[list[RecordedEpisode], int]:
    """The episodes of `env` the eval run folders `runs` recorded, run after run, each
    run's by seed and episode; and how many had an unreadable reply. Those are left out
    (such a reply has no command to write as the reply the rules teach), or with
    `keep_unreadable` kept, each such reply to be replayed as it was written."""
    kept: list[RecordedEpisode] = []
    unreadable = 0
    for run in runs:
        # A run's file is in the order its episodes finished, which concurrency and
        # resumes change; the training set, and so every batch, must not.
        for record in sorted(store.read_episodes(run), key=key_of):
            if record["env"] != env:
                continue
            turns = store.read_turns(run, record)
            # per turn: None where the reply was read, else its recorded text ("": none)
            unread = tuple(
                (turn.get("raw") or "") if store.command_read(turn) is None else None
                for turn in turns
            )
            if any(reply is not None for reply in unread):
                unreadable += 1
                if not keep_unreadable or "" in unread:  # "": no reply recorded to replay
                    continue
            else:
                unread = ()
            kept.append(
                RecordedEpisode(
                    EpisodeSpec(env, record["seed"], options or None),
                    tuple(turn["command"] for turn in turns),
                    bool(record["success"]),
                    float(record["return"]),
                    unread,
                    tuple(turn["observation"] for turn in turns),
                )
            )
    return kept, unreadable


def reply_for(command: str) -> str:
    """The reply the rules prompt teaches for `command`."""
    return f"Action: {command}"


def tool_reply_for(command: str, chat: ChatTokens, tools: list[Message]) -> str:
    """Tools mode: the reply that calls `act(command)`, as the chat template writes a
    call (Qwen 2.5's `<tool_call>` block): the call TRL's `environment_factory` loop
    parses (`textenvs.adapters.trl`), and one `textenvs eval --action-mode tools` reads."""
    return call_text(chat, TOOL_NAME, {COMMAND_ARGUMENT: command}, tools)


def take_reply(
    conversation: Conversation, reply: str, tools: list[Message] | None
) -> tuple[str | None, Message | None]:
    """`reply` read as `textenvs eval` reads it, and taken into the conversation: the
    command (None: unreadable), and in tools mode the reply's message as the chat template
    renders it. Tools mode reads it as eval does a checkpoint's: the server's message for
    it (its calls apart, `tool_calls.reply_message`) read by the agent's reader."""
    if tools is None:
        return conversation.read(reply), None
    message, finish_reason = reply_message(reply, "stop", tools)
    sent = ChatCompletionMessage.model_validate(message)
    calls = [call for call in sent.tool_calls or [] if getattr(call, "function", None)]
    reading = read_message(
        sent.content or "", "tools", conversation.context, calls=calls, finish_reason=finish_reason
    )
    if reading.command is None:
        return None, None
    return conversation.take(reading), template_messages([reading.assistant])[0]


def demonstrate(
    spec: EpisodeSpec,
    agent: str | Agent,
    make_env: EnvFactory,
    settings: LLMConfig,
    chat: ChatTokens,
    habit_share: float = 1.0,
    noise: float = 0.0,
    unread: Sequence[str | None] = (),
    answers: Sequence[str | None] = (),
) -> Demonstration:
    """`agent`'s episode of `spec` (an agent or its name), as the model's conversation in
    tokens, with `habit_share` of the replies that repeat the command before trained on
    and a random command played on `noise` of the turns (the agent's answer trained on
    instead). A turn's reply in `unread` (a recorded reply never read) is written as it
    is, and read as eval read it, rather than as the rules teach the command. A turn's
    command in `answers` is trained on in place of the one played (which is played)."""
    env = make_env(spec.env)
    try:
        noisy = NoisyAgent(make_agent(agent) if isinstance(agent, str) else agent, noise, spec.seed)
        result = asyncio.run(run_episode(env, noisy, spec.seed, options=spec.options))
        commands = [turn.command for turn in result.turns]
        conversation = Conversation.for_context(context_for(env, spec.seed, spec.options), settings)
        # tools mode: every request declares `act`, as eval's agent sends it
        tools = [act_tool(conversation.context)] if settings.mode == "tools" else None

        def written(command: str) -> str:
            return reply_for(command) if tools is None else tool_reply_for(command, chat, tools)

        growing: GrowingChat | None = None  # the sequence being written
        stop = chat.reply_stop()
        sequences: list[TokenSequence] = []
        observation, info = env.reset(seed=spec.seed, options=spec.options)
        draws = np.random.default_rng([spec.seed, len(commands)]).random(len(commands))
        for turn, command in enumerate(commands):
            answer = (answers[turn] if answers else None) or noisy.answers[turn]
            habit = turn > 0 and answer == commands[turn - 1] and draws[turn] >= habit_share
            conversation.observe(observation, info)
            # as the server renders them: a call's arguments an object, not JSON text
            request = conversation.request()
            request = request if tools is None else template_messages(request)
            if growing is None or not growing.extends(request):  # the prompt was cut
                growing, sequence = GrowingChat(chat, tools), TokenSequence()
                sequences.append(sequence)
            segment = chat.encode(growing.segment(request))
            recorded = unread[turn] if unread else None
            reply = written(command) if recorded is None else recorded
            read, message = take_reply(conversation, reply, tools)
            if read is None and tools is None and settings.reasks:
                raise ValueError(
                    f"{spec.id}: the recorded reply {reply!r} is unreadable, and this "
                    f"conversation re-asks (--reasks {settings.reasks}) where the run played "
                    "on: give the run's own conversation settings (--reasks 0)"
                )
            if read is None:
                raise ValueError(f"{spec.id}: the reader does not read {reply!r}")
            sequence.ids += segment
            sequence.labels += [IGNORED] * len(segment)
            if answer != command and not habit:  # a random or relabelled turn: its answer ends it
                answer_ids = [*chat.encode(written(answer)), stop]
                sequence.ids += answer_ids
                sequence.labels += answer_ids
                growing = None
            else:
                reply_ids = [*chat.encode(reply), stop]
                growing.replied(reply, reply_ids, message)
                sequence.ids += reply_ids
                sequence.labels += [IGNORED] * len(reply_ids) if habit else reply_ids
            observation, _, _, _, info = env.step(read)
        conversation.finish(info)
        sequences = [sequence for sequence in sequences if sequence.trained]
        return Demonstration(spec, result, sequences)
    finally:
        env.close()


def demonstrations(
    specs: Sequence[EpisodeSpec],
    agents: str | Sequence[Agent],
    make_env: EnvFactory,
    settings: LLMConfig,
    chat: ChatTokens,
    *,
    only_success: bool = False,
    habit_share: float = 1.0,
    noise: float = 0.0,
    on_episode: Callable[[Demonstration], Any] | None = None,
) -> list[Demonstration]:
    """One demonstration per spec (with `only_success`, those of won episodes only), played
    by the agent named `agents` or by the agent given for each spec."""
    kept: list[Demonstration] = []
    for number, spec in enumerate(specs):
        agent = agents if isinstance(agents, str) else agents[number]
        demonstration = demonstrate(spec, agent, make_env, settings, chat, habit_share, noise)
        if on_episode is not None:
            on_episode(demonstration)
        if demonstration.result.success or not only_success:
            kept.append(demonstration)
    return kept


def replayed_demonstrations(
    episodes: Sequence[RecordedEpisode],
    make_env: EnvFactory,
    settings: LLMConfig,
    chat: ChatTokens,
    *,
    habit_share: float = 1.0,
    on_episode: Callable[[Demonstration], Any] | None = None,
) -> list[Demonstration]:
    """The recorded `episodes` replayed as demonstrations (a reply never read written as
    recorded), each checked to end as it was recorded (another version of the scenario,
    or other reset options, would not)."""
    shown: list[Demonstration] = []
    for episode in episodes:
        agent = ReplayedAgent(episode.commands)
        demonstration = demonstrate(
            episode.spec,
            agent,
            make_env,
            settings,
            chat,
            habit_share,
            unread=episode.unread,
            answers=episode.answers,
        )
        if on_episode is not None:
            on_episode(demonstration)
        shown.append(demonstration)
        replayed = demonstration.result
        if (replayed.success, replayed.total_reward) != (episode.success, episode.total_reward):
            raise ValueError(
                f"{episode.spec.id}: replayed, its commands end otherwise than recorded "
                f"(return {replayed.total_reward:g}, recorded {episode.total_reward:g}): was "
                "the run played on another version of the scenario or other --env-option?"
            )
    return shown
