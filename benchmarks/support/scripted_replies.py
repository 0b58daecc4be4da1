"""Scripted model replies that depend only on the user messages of the prompt.

`textenvs eval`, the Inspect solver and the verifiers environment send the same messages
(observations and re-asks) for the same seed and replies, so a reply chosen from them
makes all three play the same episodes, in any order and under concurrency.
"""

from __future__ import annotations

import hashlib

from benchmarks.support.openai_server import RecordedRequest, Reply, text

# Most read; two are prose no parser accepts (a re-ask, then maybe a wasted turn); `mark`
# (em-anomaly) ends an episode early, and is not a treasure-hunt command.
REPLIES = (
    "Action: north",
    "I go east.\nAction: east",
    "hmm, not sure yet",
    "south",
    "west",
    "rotate left",
    "Action: reveal",
    "n",
    "Let me think about the field.",
    "e",
    "turn right",
    "Action: west",
    "mark",
)


def reply_for(request: RecordedRequest) -> Reply:
    users = [m.get("content") or "" for m in request.messages if m.get("role") == "user"]
    digest = hashlib.sha256()
    for content in users:
        if isinstance(content, list):  # content parts
            content = "".join(part.get("text", "") for part in content)
        digest.update(content.encode())
    reply = REPLIES[digest.digest()[0] % len(REPLIES)]
    if reply == "mark" and len(users) < 12:  # first observations look alike: play a while
        reply = "north"
    return text(reply)
