"""Every rules text holds where it is given: each scenario (and each withheld-knowledge
variant) is played in every mode an agent meets it in, and every promise its rules make
is checked against the conversation the model got.

Modes: a single-episode `textenvs eval` (with `--reasks 0`), `--trials 2`, both again
over a real `textenvs serve` service (`--env-url`), Inspect's solver, the verifiers
environment, and a training rollout (one episode per `Conversation`, as a GRPO rollout
plays it). The model is the loopback OpenAI-protocol server with scripted replies: each
conversation opens with an unreadable reply (so the re-ask and the wasted turn happen),
then sends a command that ends the episode soon.

Promises checked (the sentences are found by what they say, so a new one fails the test
until it is listed here with its check):

- about later episodes ("Each episode after the first opens with how the last one
  ended: ..."): only in trial mode, and there the next episode's first message holds the
  last one's final observation with what the sentence lists, true to the env's data;
  everywhere else no sentence speaks of later episodes and no episode end reaches the
  model;
- the re-ask ("you are told why and asked again"): only where replies are re-asked, and
  then the unreadable reply is answered with the reason before anything is stepped;
- the wasted turn ("the next observation gives the reason"): in every mode.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

pytest.importorskip("inspect_ai")
pytest.importorskip("verifiers", minversion="0.3.1")

import textenvs
from benchmarks.support.openai_server import OpenAIServer, RecordedRequest, Reply, text
from tests.adapters.conftest import textenvs_eval
from tests.adapters.harnesses import via_inspect, via_verifiers
from textenvs.agents.llm.conversation import Conversation, conversation_settings
from textenvs.episodes.loop import context_for
from textenvs.prompts import Mode, prompt_name, resolve, rules_text, system_prompt
from textenvs.service import create_app
from textenvs.service.background import serve_in_thread

#: every rules text an agent can be given: each scenario, and each variant as (env, options)
WITHHELD = {"withheld": True}
EPISODES = [(name, None) for name in textenvs.names()] + [
    ("magnetic-field", WITHHELD),
    ("em-anomaly", WITHHELD),
    ("megacity", WITHHELD),
]

#: the same, as runs of a harness: every scenario at once, then each variant
RUNS = [("all", None), *EPISODES[len(textenvs.names()) :]]

#: a command each scenario reads and that ends its episode soon, by its rules' title
COMMANDS = {
    "# Treasure Hunt": "Action: east",
    "# Magnetic Field": "Action: submit",
    "# Electromagnetic Field": "Action: mark",
    "# Squad Reconnaissance": "Action: all hold",
    "# Subterranean Megacity": "Action: wait",
}
UNREADABLE = "Let me think about it."
REASK = "Your command could not be read"  # how a re-ask opens (the llm agent's and Conversation's)

#: sentences that speak of later episodes, the end of one, or a re-ask
LATER_EPISODES = re.compile(
    r"when an episode ends|end of (?:an|the|each) episode|episode's end|next episode"
    r"|after the first|several episodes|how the last one ended",
    re.IGNORECASE,
)
ASKED_AGAIN = re.compile(r"asked again", re.IGNORECASE)
WASTED_TURN = "the next observation gives the reason"


def mf_ending(final: dict[str, Any]) -> list[str]:
    """Magnetic Field: the true message, which slots were right, all 18 windows' bits."""
    marks = zip(final["answer"], final["message"], final["slot_right"], strict=True)
    slots = [
        f"slot {i}: {answer} " + ("right" if right else f"wrong, was {true}")
        for i, (answer, true, right) in enumerate(marks, 1)
    ]
    bits = final["window_bits"]
    bands = " / ".join(" ".join(bits[start : start + 6]) for start in (0, 6, 12))
    return [
        f"The message was {final['message']}",
        *slots,
        f"windows 1-18 (one band per group): {bands}",
    ]


def em_ending(final: dict[str, Any]) -> list[str]:
    """EM Anomaly (withheld): whether the mark was close enough, and the node's distance."""
    return ["EPISODE OVER:", f"was {final['node_distance']} steps (Manhattan distance)"]


def megacity_ending(final: dict[str, Any]) -> list[str]:
    """Megacity (withheld): all five rules' exact texts."""
    return ["Every rule, as full research reveals it", *["[decoded]"] * 5]


@dataclass(frozen=True)
class Promise:
    says: str  # a phrase of the sentence, as the rules word it
    shows: Callable[[dict[str, Any]], list[str]]  # what the ending holds, from the env's data


#: the sentence of a trial-mode text that says episodes follow one another (checked: the
#: conversation holds the next episode)
SEVERAL = "several episodes in this conversation"
#: the promises about what an ended episode shows, per rules text (`prompt_name`)
PROMISES = {
    "magnetic-field": Promise("true message, which slots were right and the true bits", mf_ending),
    "magnetic-field-withheld": Promise("which slots were right and the true bits", mf_ending),
    "em-anomaly-withheld": Promise("whether your mark was close enough", em_ending),
    "megacity-withheld": Promise("with all five rules' exact texts", megacity_ending),
}


Request = list[tuple[str, str]]  # a request's messages as (role, text)
Chat = list[Request]  # one conversation's requests, in order
Ending = tuple[str, dict[str, Any]]  # an episode's final observation: text and data


def text_of(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def messages_of(request: RecordedRequest) -> Request:
    return [(m["role"], text_of(m.get("content"))) for m in request.messages]


def reply(request: RecordedRequest) -> Reply:
    """Unreadable on a conversation's first turn (and its re-ask), then a command that
    ends the episode soon."""
    messages = messages_of(request)
    users = [content for role, content in messages if role == "user"]
    opening = len(users) <= 2 and not users[0].startswith("Recap of")
    if opening and "Invalid command" not in users[-1]:
        return text(UNREADABLE)
    title = messages[0][1].split("\n\n# ", 1)[-1]
    return text(next(c for prefix, c in COMMANDS.items() if ("# " + title).startswith(prefix)))


def conversations(requests: list[RecordedRequest]) -> list[Chat]:
    """The requests of each conversation, played one after another: each opens with a
    request of two messages, the rules and a first observation (not a recap)."""
    out: list[Chat] = []
    for request in requests:
        messages = messages_of(request)
        if len(messages) == 2 and not messages[1][1].startswith("Recap of"):
            out.append([])
        out[-1].append(messages)
    return out


def sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+(?=[-A-Z`(])", " ".join(text.split()))


@dataclass
class Played:
    """One mode's conversations, and the ends of the episodes it played."""

    mode: Mode
    conversations: list[Chat]
    #: trial mode: per conversation, the final observation of its first episode
    endings: list[Ending]


def check_promises(played: Played, names: list[str]) -> None:
    assert len(played.conversations) == len(names), [c[0][1][1][:60] for c in played.conversations]
    endings = played.endings or [None] * len(names)
    for name, conversation, ending in zip(names, played.conversations, endings, strict=True):
        rules = conversation[0][0][1]
        assert rules == system_prompt(name, played.mode), name  # the text of its mode
        check_later_episodes(played.mode, name, conversation, ending)
        check_reask(played.mode, name, conversation)
        check_wasted_turn(name, rules, conversation)


def check_later_episodes(mode: Mode, name: str, conversation: Chat, ended: Ending | None) -> None:
    rules = conversation[0][0][1]
    said = [s for s in sentences(rules) if LATER_EPISODES.search(s)]
    users = [content for request in conversation for role, content in request if role == "user"]
    if not mode.continued:
        assert said == [], f"{name}: a single episode's rules speak of later ones: {said}"
        assert not any("EPISODE OVER" in u for u in users), name
        return
    promise = PROMISES.get(name)
    listed = [SEVERAL, *([promise.says] if promise else [])]
    unlisted = [s for s in said if not any(phrase in s for phrase in listed)]
    assert not unlisted, f"{name}: a promise this test does not check: {unlisted}"
    # the first message of the next episode: the last one's end, then the new one's marker
    opening = next(u for u in users if "=== NEW EPISODE: 2 OF 2 ===" in u)
    if promise is None:
        return
    assert ended is not None
    observation, data = ended
    ending = opening.split("=== NEW EPISODE")[0]
    assert observation.strip() in ending, name  # the ended episode's whole last observation
    for shown in promise.shows(data):
        assert shown in ending, f"{name}: the ending does not show {shown!r}"


def check_reask(mode: Mode, name: str, conversation: Chat) -> None:
    rules = conversation[0][0][1]
    first_turn = conversation[:3]
    reasked = [r for r in first_turn if r[-1][0] == "user" and r[-1][1].startswith(REASK)]
    if mode.reasks == 0:
        assert not ASKED_AGAIN.search(rules) and not reasked, name
        return
    assert ASKED_AGAIN.search(rules), name
    # the unreadable reply came back with the reason, before anything was stepped: the
    # re-ask request holds the same observation as the one before it
    assert reasked, f"{name}: the unreadable reply was not sent back"
    request = reasked[0]
    assert request[-2] == ("assistant", UNREADABLE) and request[:-2] == conversation[0], name
    assert "no command found" in request[-1][1] or "no orders found" in request[-1][1], name


def check_wasted_turn(name: str, rules: str, conversation: Chat) -> None:
    assert WASTED_TURN in " ".join(rules.split()), name
    # the reply stepped unreadable: the next observation opens the following request
    # after that reply, and it gives the parser's reason
    for request in conversation:
        roles = [role for role, _ in request]
        if roles.count("assistant") and request[-1][0] == "user":
            last_reply = max(i for i, role in enumerate(roles) if role == "assistant")
            if request[last_reply][1] == UNREADABLE and not request[-1][1].startswith(REASK):
                # the parser's reason, naming what it could not read
                assert request[-1][1].startswith("Invalid command: no "), name
                assert "let me think about it" in request[-1][1].lower(), name
                return
    raise AssertionError(f"{name}: no unreadable command was stepped")


# ----- the modes -----------------------------------------------------------------------


def labels() -> list[str]:
    return [prompt_name(env, options) for env, options in EPISODES]


def eval_runs(server: OpenAIServer, out: Path, *flags: str) -> list[Path]:
    """`textenvs eval --agent llm` on every scenario, then on each variant; per episode
    of `EPISODES`, the folder of its run."""
    folders = []
    for index, (env, options) in enumerate(RUNS):
        seeds = "0-1" if "--trials" in flags else "0"
        extra = ["--env-option=withheld=true"] if options else []
        run = out / f"run-{index}"
        textenvs_eval(server, run, env, seeds, *flags, *extra, "--concurrency", "1")
        folders += [run] * (len(textenvs.names()) if env == "all" else 1)
    return folders


def first_endings(runs: list[Path]) -> list[tuple[str, dict[str, Any]]]:
    """Each trial group's first episode (seed 0): its final observation, text and data."""
    out = []
    for run, (env, _) in zip(runs, EPISODES, strict=True):
        trajectory = json.loads((run / "trajectories" / f"{env}-0-0.json").read_text())
        out.append((trajectory["final_observation"], trajectory["final_info_observation"]))
    return out


def play_eval(tmp: Path, *flags: str, service: bool = False) -> Played:
    trials = "--trials" in flags
    with OpenAIServer(default=reply) as server:
        if service:
            with serve_in_thread(create_app()) as url:
                runs = eval_runs(server, tmp, *flags, "--env-url", url)
        else:
            runs = eval_runs(server, tmp, *flags)
        requests = list(server.requests)
    reasks = 0 if "--reasks" in flags else 1
    return Played(Mode(continued=trials, reasks=reasks), conversations(requests),
                  first_endings(runs) if trials else [])  # fmt: skip


def play_inspect(tmp: Path) -> Played:
    with OpenAIServer(default=reply) as server:
        for env, options in RUNS:
            via_inspect(server, tmp, env, "0", {"options": options} if options else {})
        requests = list(server.requests)
    return Played(Mode(reasks=1), conversations(requests), [])


def play_verifiers(tmp: Path) -> Played:
    with OpenAIServer(default=reply) as server:
        for index, (env, options) in enumerate(RUNS):
            via_verifiers(server, tmp / f"vf-{index}", env, "0", dict(options or {}))
        requests = list(server.requests)
    return Played(Mode(reasks=1), conversations(requests), [])


def play_rollouts(tmp: Path) -> Played:
    """One episode per conversation through `Conversation`, as a training rollout plays
    it: the model's replies go to the env, its reward is the episode's."""
    with OpenAIServer(default=reply) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        for env_name, options in EPISODES:
            rollout(client, env_name, options)
        requests = list(server.requests)
    return Played(Mode(reasks=1), conversations(requests), [])


def rollout(client: openai.OpenAI, env_name: str, options: dict[str, Any] | None) -> None:
    env = textenvs.make(env_name)
    context = context_for(env, 0, options)
    conversation = Conversation.for_context(context, conversation_settings())
    observation, info = env.reset(seed=0, options=options)
    while True:
        conversation.observe(observation, info)
        command = None
        while command is None:
            response = client.chat.completions.create(
                model="test-model",
                messages=conversation.request(),  # type: ignore[arg-type]
            )
            conversation.sent(response.usage.prompt_tokens if response.usage else 0)
            command = conversation.read(response.choices[0].message.content or "")
        observation, _, terminated, truncated, info = env.step(command)
        if terminated or truncated:
            conversation.finish(info)
            return


MODES: dict[str, Callable[[Path], Played]] = {
    "eval --reasks 0": lambda tmp: play_eval(tmp, "--reasks", "0"),
    "eval --trials 2": lambda tmp: play_eval(tmp, "--trials", "2"),
    "eval --env-url": lambda tmp: play_eval(tmp, service=True),
    "eval --env-url --trials 2": lambda tmp: play_eval(tmp, "--trials", "2", service=True),
    "inspect": play_inspect,
    "verifiers": play_verifiers,
    "training rollout": play_rollouts,
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_every_promise_holds_in_every_mode(mode: str, tmp_path: Path) -> None:
    played = MODES[mode](tmp_path)
    check_promises(played, labels())
    if played.mode.continued:  # every listed promise was checked in trial mode
        assert {name for name in labels() if name in PROMISES} == set(PROMISES)


def test_the_check_fails_where_a_promise_is_broken() -> None:
    """Not vacuous: the trial-mode text given to a single episode fails, and so does a
    trial whose next episode does not open with what the last one's end showed."""
    rules = system_prompt("magnetic-field", Mode(continued=True, reasks=1))
    conversation = [[("system", rules), ("user", "first observation")]]
    with pytest.raises(AssertionError, match="speak of later ones"):
        check_later_episodes(Mode(reasks=1), "magnetic-field", conversation, None)
    env = textenvs.make("magnetic-field")
    env.reset(seed=0)
    final, *_, info = env.step("submit")
    opening = "EPISODE 1 OF 2 OVER: failure.\n\n=== NEW EPISODE: 2 OF 2 === ..."
    conversation[0].append(("user", opening))
    trial, ended = Mode(continued=True, reasks=1), (final, info["observation"])
    with pytest.raises(AssertionError):
        check_later_episodes(trial, "magnetic-field", conversation, ended)
    conversation[0][-1] = ("user", f"EPISODE 1 OF 2 OVER: {final}\n\n=== NEW EPISODE: 2 OF 2 ===")
    check_later_episodes(trial, "magnetic-field", conversation, ended)  # the whole end: it holds


def every_mode() -> Iterator[Mode]:
    for continued in (False, True):
        for reasks in (0, 1, 3):
            yield Mode(continued=continued, reasks=reasks)
    yield Mode(answer="tools")
    yield Mode(answer="json", example='{"action": "north"}')
    yield Mode(answer="json", example='{"reasoning": "...", "action": "north"}', reasoning=True)


@pytest.mark.parametrize("name", sorted({name for name in labels()}))
def test_every_text_resolves_in_every_mode(name: str) -> None:
    for mode in every_mode():
        system = system_prompt(name, mode)
        assert not re.search(r"<!--|-->|\{(?:rules|reasks|example)\}", system), (name, mode)
        assert rules_text(name, mode).strip() in system
        assert bool(ASKED_AGAIN.search(system)) == (mode.reasks > 0)
        single = [s for s in sentences(system) if LATER_EPISODES.search(s)]
        assert mode.continued or not single, (name, single)
        assert ("Action: <command>" in system) == (mode.answer == "text")
        if mode.answer == "json":
            assert mode.example in system and ("`reasoning`" in system) == mode.reasoning


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a\n<!-- if weather -->\nb\n<!-- end -->", "unknown prompt condition"),
        ("a\n<!-- if continued -->\nb", "leaves a block open"),
        ("a\n<!-- end -->", "never opened"),
        ("a <!-- if continued --> b\n<!-- end -->", "on a line of its own"),
    ],
)
def test_a_malformed_marker_is_an_error(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        resolve(text, Mode())


def test_markers_keep_and_drop_their_lines() -> None:
    text = "a\n<!-- if continued -->\nb\n<!-- end -->\n<!-- if not continued -->\nc\n<!-- end -->"
    assert resolve(text, Mode()) == "a\nc"
    assert resolve(text, Mode(continued=True)) == "a\nb"
    assert resolve("asked {reasks}", Mode(reasks=2)) == "asked twice"


def test_the_rules_printed_and_served_are_those_of_their_mode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`textenvs rules` (one episode, or `--trials K`) and the service's rules (one
    episode: a session is one env, reset by its client) are the texts of their mode."""
    from textenvs.cli import main
    from textenvs.service.client import ServiceClient

    for env, options in EPISODES:
        name = prompt_name(env, options)
        flags = ["--env-option", "withheld=true"] if options else []
        for trials, mode in (([], Mode()), (["--trials", "2"], Mode(continued=True))):
            assert main(["rules", env, *flags, *trials]) == 0
            printed = capsys.readouterr().out
            assert printed == rules_text(name, mode)
            later = [s for s in sentences(printed) if LATER_EPISODES.search(s)]
            assert bool(later) == (mode.continued and name in PROMISES), (name, later)
    with serve_in_thread(create_app()) as url, ServiceClient(url) as client:
        for env in textenvs.names():
            served = client.env_info(env)["rules"]
            assert served == rules_text(env) and not LATER_EPISODES.search(served)
