"""Observation cost in tokens (tiktoken `o200k_base`), every scenario vs TextArena.

1. Tokens per observation: every observation text of `--episodes` random and scripted
   episodes per scenario (median and max).
2. Prompt size per decision of the `llm` agent: the real agent (`agents/llm`, window
   policy: system prompt + the last K turns + the new observation) plays whole
   episodes against the loopback OpenAI-compatible server of the test suite, which
   answers each request with a random well-formed command; every request's messages are
   counted. The prompt is bounded by the history window, so it stays flat however long
   the episode runs.
3. TextArena's default `FrozenLake-v0` (with its default wrappers): one env reset for
   `--resets` episodes in a row, random actions; the observation it hands the agent holds
   every message since the env was made, so it grows across resets.

    python -m benchmarks.observation_tokens [--episodes 20] [--resets 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import textenvs
from benchmarks._common import table
from benchmarks._tokens import chat_tokens, counter
from textenvs.agents import make_agent
from textenvs.episodes.loop import context_for, run_episode

TEXTARENA_ID = "FrozenLake-v0"
TEXTARENA_ACTIONS = ["[up]", "[down]", "[left]", "[right]"]


def observation_texts(name: str, agent: str, episodes: int) -> list[str]:
    texts: list[str] = []
    for seed in range(episodes):
        result = asyncio.run(run_episode(textenvs.make(name), make_agent(agent), seed))
        texts += [turn.observation for turn in result.turns] + [result.final_observation]
    return texts


def llm_prompts(name: str, seed: int, count: Callable[[str], int]) -> list[int]:
    """Prompt tokens of each request the `llm` agent sends over one whole episode."""
    from benchmarks.support.openai_server import OpenAIServer, text
    from textenvs.agents.llm.agent import LLMAgent

    env = textenvs.make(name)
    rng = np.random.default_rng(seed)
    latest: dict[str, Any] = {}
    # The server thread answers with a command drawn for the turn being played.
    with OpenAIServer(default=lambda _request: text(env.random_command(latest, rng))) as server:
        # the sliding window: its prompt size per decision is what this section shows
        agent = LLMAgent(model="bench", base_url=server.base_url, history_policy="window")

        async def play() -> None:
            observation, info = env.reset(seed=seed)
            agent.reset(context_for(env, seed))
            done = False
            while not done:
                latest.clear()
                latest.update(info)
                decision = await agent.act(observation, info)
                observation, _, terminated, truncated, info = env.step(decision.command)
                done = terminated or truncated
            await agent.aclose()

        asyncio.run(play())
        return [chat_tokens(request.messages, count) for request in server.requests]


def textarena_growth(resets: int, count: Callable[[str], int]) -> list[tuple[int, int, int]]:
    """(episode, tokens of its first observation, of its last) over consecutive resets."""
    import textarena as ta

    env = ta.make(TEXTARENA_ID)
    rng = np.random.default_rng(0)
    out = []
    for episode in range(resets):
        env.reset(num_players=1, seed=episode)
        first = last = ""
        done = False
        while not done:
            _, last = env.get_observation()
            first = first or last
            done, _ = env.step(TEXTARENA_ACTIONS[int(rng.integers(4))])
        out.append((episode + 1, count(first), count(last)))
    env.close()
    return out


def _stats(values: list[int]) -> str:
    return f"{statistics.median(values):,.0f} / {max(values):,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20, help="episodes per scenario/agent")
    parser.add_argument("--resets", type=int, default=30, help="TextArena episodes in a row")
    parser.add_argument("--llm-seeds", type=int, default=3, help="llm-agent episodes per scenario")
    parser.add_argument(
        "--llm-search",
        type=int,
        default=20,
        help="most seeds tried for an episode that outlasts the history window",
    )
    args = parser.parse_args()
    label, count = counter()
    print(f"tokenizer: {label}\n")

    rows = []
    for scenario in textenvs.SCENARIOS:
        random_ = [count(t) for t in observation_texts(scenario.name, "random", args.episodes)]
        scripted = [count(t) for t in observation_texts(scenario.name, "scripted", args.episodes)]
        rows.append([scenario.name, _stats(random_), _stats(scripted)])
    print(f"1. Tokens per observation ({args.episodes} episodes each), median / max")
    print(table(["scenario", "random agent", "scripted agent"], rows))

    from textenvs.agents.llm.config import LLMConfig

    window = LLMConfig(model="bench").history + 1  # turns in a full prompt
    print(f"\n2. llm agent: prompt tokens per decision over whole episodes (history {window - 1})")
    rows = []
    for scenario in textenvs.SCENARIOS:
        prompts: list[int] = []
        longest: list[int] = []
        # Play at least --llm-seeds episodes, and more (bounded) until one outlasts the
        # history window: the point is what happens once the window is full.
        for seed in range(max(args.llm_seeds, args.llm_search)):
            tokens = llm_prompts(scenario.name, seed, count)
            prompts += tokens
            longest = max(longest, tokens, key=len)
            if seed + 1 >= args.llm_seeds and len(longest) > window:
                break
        full = longest[window - 1 :] or longest[-1:]
        rows.append(
            [
                scenario.name,
                f"{len(longest)}",
                f"{longest[0]:,}",
                f"{longest[min(window, len(longest)) - 1]:,}",
                f"{max(full):,}",
                f"{longest[-1]:,}",
                f"{max(prompts):,}",
            ]
        )
    header = ["scenario", "decisions", "first", f"at {window}", f"max after {window}", "last"]
    print(table([*header, "max (all episodes)"], rows))

    print(f"\n3. TextArena {TEXTARENA_ID} (default wrappers), one env over consecutive resets")
    growth = textarena_growth(args.resets, count)
    marks = sorted({1, 2, 5, 10, 20, 50, 100, len(growth)} & set(range(1, len(growth) + 1)))
    rows = [[str(e), f"{first:,}", f"{last:,}"] for e, first, last in growth if e in marks]
    print(table(["episode", "first obs tokens", "last obs tokens"], rows))
    first, final = growth[0][1], growth[-1][2]
    print(
        f"growth: the last observation of episode {len(growth)} is "
        f"{final / first:.1f}x the first of episode 1"
    )


if __name__ == "__main__":
    main()
