"""Prompt tokens per harness on the same episodes: `textenvs eval --agent llm`, Inspect's
solver and the verifiers environment (and, for reference, `textenvs eval` with the old
8-turn window that Inspect used to keep).

A deterministic fake model (the test suite's loopback OpenAI-protocol server, replies
chosen from the prompt's user messages: `benchmarks/support/scripted_replies.py`) plays every
scenario on `--seeds` seeds through each harness; the server counts each request's
prompt tokens with o200k_base (`benchmarks/_tokens.py`). Same conversation code, same
defaults: the three harnesses should send the same tokens.

    python -m benchmarks.harness_prompts [--seeds 0-9]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._common import table
from benchmarks._tokens import chat_tokens, counter


def run_harness(name: str, base_url: str, seeds: str, out: Path) -> None:
    if name.startswith("textenvs eval"):
        from textenvs.cli import main

        extra = ["--history-policy", "window", "--history", "8"] if "window" in name else []
        run_dir = str(out / name.replace(" ", "_"))
        # the model the server lists: no preflight request in the count
        code = main(["eval", "--env", "all", "--seeds", seeds, "--agent", "llm", "--model",
                     "test-model", "--base-url", base_url, "--out", run_dir,
                     "--concurrency", "2", *extra])  # fmt: skip
        assert code == 0
    elif name == "inspect":
        from inspect_ai import eval as inspect_eval
        from inspect_ai.model import get_model

        from textenvs.adapters.inspect import scenario_task

        model = get_model("openai-api/loopback/bench", base_url=base_url, api_key="k",
                          memoize=False)  # fmt: skip
        (log,) = inspect_eval(scenario_task("all", seeds), model=model, display="none",
                              log_dir=str(out / "inspect"), max_samples=2)  # fmt: skip
        assert log.status == "success", log.error
    else:
        import verifiers.v1 as vf

        from benchmarks.support.verifiers_eval import vf_eval

        config = vf.resolve_env_config({"taskset": {"id": "textenvs", "seeds": seeds}})
        vf_eval(config, base_url, out / "verifiers", concurrency=2)


def main() -> None:
    from benchmarks.support.openai_server import OpenAIServer, RecordedRequest, Reply
    from benchmarks.support.scripted_replies import reply_for

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0-9", help="seeds per scenario (default 0-9)")
    args = parser.parse_args()
    label, count = counter()

    sent: list[int] = []  # prompt tokens of each request of the current harness

    def answer(request: RecordedRequest) -> Reply:
        tokens = chat_tokens(request.messages, count)
        sent.append(tokens)
        usage = {"prompt_tokens": tokens, "completion_tokens": 5, "total_tokens": tokens + 5}
        return Reply(content=reply_for(request).content, usage=usage)

    harnesses = ["textenvs eval", "inspect", "verifiers", "textenvs eval (window 8)"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in harnesses:
            started = time.perf_counter()
            sent.clear()
            with OpenAIServer(default=answer) as server:
                run_harness(name, server.base_url, args.seeds, Path(tmp))
                requests = server.requests
            tokens = sum(sent)
            episodes = sum(1 for r in requests if _opens_episode(r.messages))
            rows.append([name, str(episodes), f"{len(requests):,}", f"{tokens:,}",
                         f"{time.perf_counter() - started:.0f} s"])  # fmt: skip
    print(f"Prompt tokens ({label}) sent to a fake model on loopback, seeds {args.seeds} "
          "of every scenario")  # fmt: skip
    print(table(["harness", "episodes", "requests", "prompt tokens", "wall"], rows))


def _opens_episode(messages: list[dict[str, object]]) -> bool:
    """The first request of an episode: the rules and the first observation only."""
    first: Callable[[], str] = lambda: str(messages[1].get("content") or "")  # noqa: E731
    return len(messages) == 2 and not first().startswith("Recap of")


if __name__ == "__main__":
    main()
