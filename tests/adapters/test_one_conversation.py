"""One model, one prompt, whatever the harness: `textenvs eval --agent llm`, Inspect's
solver and the verifiers environment all play through the one `Conversation`
(`agents/llm/conversation.py`), and send the loopback model the same request sequences
(message lists, turn by turn) for the same episodes, under the default conversation
settings, a budget small enough to cut history, and a window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")
pytest.importorskip("verifiers", minversion="0.3.1")


from benchmarks.support.openai_server import OpenAIServer, RecordedRequest
from tests.adapters.conftest import textenvs_eval
from tests.adapters.harnesses import via_inspect, via_verifiers
from textenvs.agents.llm.observation_view import VIEW_NOTE

Request = list[tuple[str, str]]


def text_of(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def episodes(requests: list[RecordedRequest]) -> list[list[Request]]:
    """Each episode's requests in order (a request is its list of (role, text)), in a
    canonical order. Episodes are played one at a time: each starts with a request of
    two messages (the rules and the first observation, not a recap of cut turns)."""
    out: list[list[Request]] = []
    for recorded in requests:
        request = [(m["role"], text_of(m.get("content"))) for m in recorded.messages]
        if len(request) == 2 and not request[1][1].startswith("Recap of"):
            out.append([])
        out[-1].append(request)
    return sorted(out)


# (scenarios, seeds, episodes, harness settings, `textenvs eval` flags)
SETTINGS = {
    "defaults": ("em-anomaly,treasure-hunt", "0-2", 6, {}, []),
    "cut": ("em-anomaly", "0-1", 2, {"prompt_budget": 1600}, ["--prompt-budget", "1600"]),
    "window": ("treasure-hunt", "3-4", 2, {"history": 3}, ["--history", "3"]),
    # observations as changes, in a window: each prompt opens with a whole one
    "changes": ("em-anomaly", "0-1", 2, {"observations": "changes", "history": 3},
                ["--observations", "changes", "--history", "3"]),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("case", list(SETTINGS))
def test_every_harness_sends_the_same_requests(case: str, tmp_path: Path) -> None:
    from benchmarks.support.scripted_replies import reply_for

    envs, seeds, count, settings, flags = SETTINGS[case]
    seen: dict[str, list[list[Request]]] = {}
    for harness in ("textenvs eval", "inspect", "verifiers"):
        with OpenAIServer(default=reply_for) as server:
            if harness == "textenvs eval":
                records = textenvs_eval(server, tmp_path / "run", envs, seeds, *flags,
                                        "--concurrency", "1")  # fmt: skip
                assert len(records) == count
            elif harness == "inspect":
                via_inspect(server, tmp_path / "logs", envs, seeds, settings)
            else:
                via_verifiers(server, tmp_path / "vf", envs, seeds, settings)
            seen[harness] = episodes(server.requests)
    expected = seen["textenvs eval"]
    assert len(expected) == count
    for harness in ("inspect", "verifiers"):
        assert len(seen[harness]) == count, harness
        for episode, reference in zip(seen[harness], expected, strict=True):
            assert episode == reference, f"{harness} differs from textenvs eval"
    requests = [request for episode in expected for request in episode]
    reasked = any(role == "user" and "could not be read" in text
                  for request in requests for role, text in request)  # fmt: skip
    assert reasked  # the replies exercised re-asks
    if case == "cut":
        assert any("Recap of turns" in text for request in requests for _, text in request)
    if case == "window":
        # at most 3 past turns and the current one; episodes ran longer than that
        observations = [sum(role == "user" and "Reply again" not in text for role, text in r)
                        for r in requests]  # fmt: skip
        assert max(observations) == 4 and max(len(episode) for episode in expected) > 4
    if case == "changes":
        assert any(text.startswith(VIEW_NOTE) for request in requests for _, text in request)
