"""verifiers adapter (`pip install 'textenvs[verifiers]'`): textenvs episodes as a
verifiers multi-turn environment, for `vf-eval` and the trainers that load verifiers
environments.

    import verifiers as vf
    env = vf.load_environment("textenvs", env="treasure-hunt", seeds="0-999")

`verifiers.load_environment("textenvs", ...)` imports the `textenvs` package and calls
its `load_environment`, which lands here (the standalone module in
`environments/textenvs_env` does the same for `vf-install`). One dataset row is one
episode (scenario, seed, reset options): the prompt is the scenario's system prompt
and the first observation. Every request is built by the `llm` agent's conversation
code (`adapters.conversation`): the same history policy, budget, re-asks and reading
as `textenvs eval --agent llm`, so the model is sent the same messages. Every rollout
builds its own env from the row's seed, so the rollouts of a group play the same
episode. The reward is the episode return (or success, 0/1); success, return, steps
and invalid commands are reported as metrics, and the trajectory step that stepped
the env carries that step's reward.

This uses the classic verifiers API (`vf.MultiTurnEnv`, `vf-eval`), which verifiers
0.3 keeps under `verifiers.legacy` beside its new `verifiers.v1` stack.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import verifiers as vf
from datasets import Dataset

import textenvs
from textenvs.adapters.conversation import Conversation, conversation_settings
from textenvs.adapters.episodes import EpisodeSpec, Seeds, episode_scores, episode_specs
from textenvs.evals.episode import FAILURE, SUCCESS, TIMEOUT, EpisodeResult
from textenvs.prompts import prompt_name, system_prompt

ENV_KEY = "textenvs_env"  # the live env in a rollout's state (removed at cleanup)
CONVERSATION_KEY = "textenvs_conversation"  # its Conversation (removed at cleanup)
RESULT_KEY = "textenvs_result"  # the episode's EpisodeResult (no turns kept)
Reward = Literal["return", "success"]
MESSAGE_TYPES = {
    "system": vf.SystemMessage,
    "user": vf.UserMessage,
    "assistant": vf.AssistantMessage,
}


def rows(specs: list[EpisodeSpec]) -> list[dict[str, Any]]:
    """Dataset rows: the opening messages and the episode's identity in `info`."""
    out = []
    for spec in specs:
        first, _ = textenvs.make(spec.env).reset(seed=spec.seed, options=spec.options)
        prompt = [
            {"role": "system", "content": system_prompt(prompt_name(spec.env, spec.options))},
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
                 eval_specs: list[EpisodeSpec] | None = None,
                 conversation: dict[str, Any] | None = None, **kwargs: Any) -> None:  # fmt: skip
        if reward not in ("return", "success"):
            raise ValueError(f"reward must be 'return' or 'success', not {reward!r}")
        self.settings = conversation_settings(**(conversation or {}))
        rubric = vf.Rubric(funcs=[episode_return if reward == "return" else success])
        for metric in (success, episode_return, steps, invalid_actions):
            if metric not in rubric.funcs:
                rubric.add_metric(metric)
        eval_specs = eval_specs or specs
        budget = max(textenvs.make(s.env).max_steps for s in [*specs, *eval_specs])
        super().__init__(
            dataset=Dataset.from_list(rows(specs)),
            eval_dataset=Dataset.from_list(rows(eval_specs)),
            rubric=rubric,
            max_turns=budget * (self.settings.reasks + 1),
            **kwargs,
        )

    async def setup_state(self, state: vf.State) -> vf.State:
        info = state["info"]
        env = textenvs.make(info["env"])
        options = json.loads(info["options"])
        first, first_info = env.reset(seed=int(info["seed"]), options=options)
        conversation = Conversation.for_episode(env.name, options, env.parse, self.settings)
        conversation.observe(first, first_info)
        state[ENV_KEY] = env
        state[CONVERSATION_KEY] = conversation
        state[RESULT_KEY] = EpisodeResult(env=env.name, seed=int(info["seed"]), agent="verifiers")
        return state

    async def get_prompt_messages(self, state: vf.State) -> vf.Messages:
        """The `llm` agent's request for this turn: its history, cut to its budget."""
        conversation: Conversation = state[CONVERSATION_KEY]
        if state["trajectory"]:
            last = state["trajectory"][-1]
            usage = getattr(last["response"], "usage", None)
            conversation.sent(usage.prompt_tokens if usage else 0)
            command = conversation.read(reply_text(last["completion"][-1]))
            if command is None:
                _result(state).reasks += 1
            else:
                self.play(state, command)
                if state.get("final_env_response") is not None:
                    return last["prompt"]  # unused: the rollout ends
        return [MESSAGE_TYPES[m["role"]](content=m["content"]) for m in conversation.request()]

    def play(self, state: vf.State, command: str) -> None:
        """Step the env with `command` and start the next turn, or end the episode."""
        conversation: Conversation = state[CONVERSATION_KEY]
        result = _result(state)
        text, reward, terminated, truncated, info = state[ENV_KEY].step(command)
        state["trajectory"][-1]["reward"] = reward
        result.total_reward += reward
        result.steps = info["steps_used"]
        result.invalid_actions += int(info["invalid_action"])
        if terminated or truncated:
            result.success = bool(info["success"])
            result.outcome = SUCCESS if result.success else (FAILURE if terminated else TIMEOUT)
            result.final_observation = text
            conversation.finish(info)
            state["final_env_response"] = [vf.UserMessage(content=text)]
        else:
            conversation.observe(text, info)

    async def env_response(
        self, messages: vf.Messages, state: vf.State, **kwargs: Any
    ) -> vf.Messages:
        return []  # unused: `get_prompt_messages` builds every request

    async def render_completion(self, state: vf.State) -> None:
        """Every message after the opening prompt, none cut, and the final observation."""
        conversation = state.get(CONVERSATION_KEY)
        transcript = conversation.transcript[len(state["prompt"]) :] if conversation else []
        state["completion"] = [*transcript, *(state.get("final_env_response") or [])]

    @vf.cleanup
    async def close_env(self, state: vf.State) -> None:
        state.pop(CONVERSATION_KEY, None)
        env = state.pop(ENV_KEY, None)
        if env is not None:
            env.close()


def load_environment(
    env: str = "all",
    seeds: Seeds = "0-99",
    eval_seeds: Seeds | None = None,
    reward: Reward = "return",
    history_policy: str | None = None,
    prompt_budget: int | None = None,
    history: int | None = None,
    history_keep: float | None = None,
    reasks: int | None = None,
    **options: Any,
) -> TextenvsEnv:
    """A verifiers environment over `env` (a scenario name, a comma list, or "all") and
    `seeds` ("0-99", "3,7", or ints); `eval_seeds` (default: the same seeds) make the
    eval split. `reward` is "return" or "success". The conversation settings are the
    `llm` agent's (`textenvs eval --history-policy ...`) with its defaults: the append
    policy within a 24,000-token prompt budget, one re-ask of an unreadable reply. Other
    keyword arguments are the scenario's reset options (e.g. `level=2`)."""
    specs = episode_specs(env, seeds, options or None)
    eval_specs = episode_specs(env, eval_seeds, options or None) if eval_seeds is not None else None
    conversation = {"history_policy": history_policy, "prompt_budget": prompt_budget,
                    "history": history, "history_keep": history_keep, "reasks": reasks}  # fmt: skip
    return TextenvsEnv(specs, reward=reward, eval_specs=eval_specs, conversation=conversation)
