"""verifiers adapter (`pip install 'textenvs[verifiers]'`): textenvs episodes as a
verifiers multi-turn environment, for `vf-eval` and the trainers that load verifiers
environments.

    import verifiers as vf
    env = vf.load_environment("textenvs", env="treasure-hunt", seeds="0-999")

`verifiers.load_environment("textenvs", ...)` imports the `textenvs` package and calls
its `load_environment`, which lands here. One dataset row is one episode (scenario,
seed, reset options): the prompt is the scenario's system prompt (the one `textenvs
eval` sends) and the first observation. Each model reply is read by the scenario's
parser and stepped; the next observation is the environment's message; the episode's
end ends the rollout with the final observation. Every rollout builds its own env from
the row's seed, so the rollouts of a group play the same episode. The reward is the
episode return (or success, 0/1); success, return, steps and invalid commands are
reported as metrics, and each trajectory step carries the env reward of its step.

This targets the classic verifiers API (`vf.MultiTurnEnv`, `vf-eval`), which verifiers
0.3 keeps under `verifiers.legacy`; 0.4 dropped it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import verifiers as vf
from datasets import Dataset

import textenvs
from textenvs.adapters.episodes import (
    EpisodeSpec,
    Seeds,
    episode_scores,
    episode_specs,
    reask_text,
)
from textenvs.core.parsing import ParseError
from textenvs.evals.episode import FAILURE, SUCCESS, TIMEOUT, EpisodeResult
from textenvs.prompts import system_prompt

ENV_KEY = "textenvs_env"  # the live env in a rollout's state (removed at cleanup)
RESULT_KEY = "textenvs_result"  # the episode's EpisodeResult (no turns kept)
VALID_KEY = "textenvs_valid_commands"  # the command forms accepted now (for a re-ask)
Reward = Literal["return", "success"]


def rows(specs: list[EpisodeSpec]) -> list[dict[str, Any]]:
    """Dataset rows: the opening messages and the episode's identity in `info`."""
    out = []
    for spec in specs:
        first, _ = textenvs.make(spec.env).reset(seed=spec.seed, options=spec.options)
        prompt = [
            {"role": "system", "content": system_prompt(spec.env)},
            {"role": "user", "content": first},
        ]
        info = {"env": spec.env, "seed": spec.seed, "options": json.dumps(spec.options)}
        out.append({"prompt": prompt, "answer": "", "info": info})
    return out


def _result(state: vf.State) -> EpisodeResult:
    return state[RESULT_KEY]


async def success(state: vf.State) -> float:
    return episode_scores(_result(state))["success"]


async def episode_return(state: vf.State) -> float:
    return episode_scores(_result(state))["return"]


async def steps(state: vf.State) -> float:
    return episode_scores(_result(state))["steps"]


async def invalid_actions(state: vf.State) -> float:
    return episode_scores(_result(state))["invalid_actions"]


def reply_text(message: Any) -> str:
    """The visible text of an assistant message (string or content parts)."""
    content = message.get("content") if hasattr(message, "get") else None
    if isinstance(content, list):
        parts = [p.get("text") if hasattr(p, "get") else None for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return content or ""


class TextenvsEnv(vf.MultiTurnEnv):
    """One rollout = one textenvs episode; see the module docstring."""

    def __init__(self, specs: list[EpisodeSpec], *, reward: Reward = "return",
                 reasks: int = 0, eval_specs: list[EpisodeSpec] | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        if reward not in ("return", "success"):
            raise ValueError(f"reward must be 'return' or 'success', not {reward!r}")
        if reasks < 0:
            raise ValueError(f"reasks must be 0 or more, not {reasks}")
        self.reasks = reasks
        rubric = vf.Rubric(funcs=[episode_return if reward == "return" else success])
        for metric in (success, episode_return, steps, invalid_actions):
            if metric not in rubric.funcs:
                rubric.add_metric(metric)
        budget = max(textenvs.make(s.env).max_steps for s in [*specs, *(eval_specs or [])])
        super().__init__(
            dataset=Dataset.from_list(rows(specs)),
            eval_dataset=Dataset.from_list(rows(eval_specs)) if eval_specs else None,
            rubric=rubric,
            max_turns=budget * (reasks + 1),
            **kwargs,
        )

    async def setup_state(self, state: vf.State) -> vf.State:
        info = state["info"]
        env = textenvs.make(info["env"])
        _, first = env.reset(seed=int(info["seed"]), options=json.loads(info["options"]))
        state[ENV_KEY] = env
        state[VALID_KEY] = first["valid_commands"]
        state[RESULT_KEY] = EpisodeResult(env=env.name, seed=int(info["seed"]), agent="verifiers")
        state["textenvs_reasks"] = 0
        return state

    async def env_response(
        self, messages: vf.Messages, state: vf.State, **kwargs: Any
    ) -> vf.Messages:
        env = state[ENV_KEY]
        result = _result(state)
        reply = reply_text(messages[-1])
        if state["textenvs_reasks"] < self.reasks:
            try:
                env.parse(reply)
                state["textenvs_reasks"] = 0
            except ParseError as exc:
                state["textenvs_reasks"] += 1
                result.reasks += 1
                return [vf.UserMessage(content=reask_text(exc, state[VALID_KEY]))]
        state["textenvs_reasks"] = 0
        text, reward, terminated, truncated, info = env.step(reply)
        state["trajectory"][-1]["reward"] = reward
        state[VALID_KEY] = info["valid_commands"]
        result.total_reward += reward
        result.steps = info["steps_used"]
        result.invalid_actions += int(info["invalid_action"])
        response = [vf.UserMessage(content=text)]
        if terminated or truncated:
            result.success = bool(info["success"])
            result.outcome = SUCCESS if result.success else (FAILURE if terminated else TIMEOUT)
            result.final_observation = text
            state["final_env_response"] = response
        return response

    @vf.cleanup
    async def close_env(self, state: vf.State) -> None:
        env = state.pop(ENV_KEY, None)
        if env is not None:
            env.close()


def load_environment(
    env: str = "all",
    seeds: Seeds = "0-99",
    eval_seeds: Seeds | None = None,
    reward: Reward = "return",
    reasks: int = 0,
    **options: Any,
) -> TextenvsEnv:
    """A verifiers environment over `env` (a scenario name, a comma list, or "all") and
    `seeds` ("0-99", "3,7", or ints); `eval_seeds` (default: the same seeds) make the
    eval dataset. `reward` is "return" or "success". `reasks` re-asks an unreadable
    reply that many times before stepping it (0: every reply is a step, a wasted turn
    when unreadable; `textenvs eval`'s llm agent uses 1). Other keyword arguments are
    the scenario's reset options (e.g. `level=2` for magnetic-field)."""
    specs = episode_specs(env, seeds, options or None)
    eval_specs = episode_specs(env, eval_seeds, options or None) if eval_seeds is not None else None
    return TextenvsEnv(specs, reward=reward, reasks=reasks, eval_specs=eval_specs)
