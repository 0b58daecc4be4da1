"""TextArena adapter: every textenvs scenario as a single-player TextArena env.

Importing this module registers each scenario with TextArena as `textenvs-<name>-v<N>`
(e.g. `textenvs-treasure-hunt-v0`), plus a `-raw` variant without the default wrapper:

    import textarena as ta
    import textenvs.adapters.textarena  # registers the scenarios

    env = ta.make("textenvs-treasure-hunt-v0")
    env.reset(num_players=1, seed=3)
    done = False
    while not done:
        player_id, observation = env.get_observation()
        done, step_info = env.step(action=agent(observation))
    rewards, game_info = env.close()

The textenvs env owns the rules, the step budget and the wasted-turn policy; this class
only relays text and mirrors the outcome into TextArena's `SinglePlayerState`. Rewards
returned by `close()` are the episode return (sum of the textenvs rewards);
`game_info[0]` carries `success`, `reason` and `steps`.

History: TextArena's `LLMObservationWrapper` keeps every message it ever saw, across
resets, so its prompt grows without bound over many episodes. Each textenvs observation
already shows everything the agent may see, so the default wrapper here,
`CurrentObservationWrapper`, shows the rules plus the latest observation and forgets
everything at `reset`.
"""

from __future__ import annotations

from typing import Any

import textarena as ta
from textarena.envs.registration import ENV_REGISTRY, register_with_versions

import textenvs
from textenvs.core import registry
from textenvs.core.env import TextEnv

ENTRY_POINT = "textenvs.adapters.textarena:TextenvsArenaEnv"


class TextenvsArenaEnv(ta.Env):
    """One textenvs scenario behind TextArena's `Env` API (one player)."""

    def __init__(self, env_name: str) -> None:
        super().__init__()
        self.env_name = env_name
        self.textenv: TextEnv[Any, Any] = textenvs.make(env_name)
        self.state: ta.SinglePlayerState | None = None
        self._return = 0.0
        self._board = ""

    def reset(self, num_players: int = 1, seed: int | None = None) -> None:
        if num_players != 1:
            raise ValueError(f"textenvs scenarios are single-player, got num_players={num_players}")
        # seed=None: TextArena's State would otherwise reseed the global `random` module;
        # the textenvs env draws only from its own generator, seeded here.
        self.state = ta.SinglePlayerState(
            num_players=1, seed=None, max_turns=self.textenv.max_steps
        )
        text, info = self.textenv.reset(seed=seed)
        self._return = 0.0
        self._board = text
        self.state.reset(
            game_state={"observation": info["observation"], "seed": seed},
            player_prompt_function=self._prompt,
        )
        self.state.add_observation(message=text, observation_type=ta.ObservationType.GAME_BOARD)

    def _prompt(self, player_id: int, game_state: dict[str, Any]) -> str:
        return (
            f"You are playing {self.textenv.title}. Reply with one command per turn.\n\n"
            f"{self.textenv.rules.strip()}"
        )

    def step(self, action: str) -> tuple[bool, dict[str, Any]]:
        state = self._require_state()
        if state.done:
            raise RuntimeError("the episode is over: call reset() first")
        state.add_observation(
            from_id=state.current_player_id,
            message=action,
            observation_type=ta.ObservationType.PLAYER_ACTION,
        )
        text, reward, terminated, truncated, info = self.textenv.step(action)
        self._return += reward
        self._board = text
        state.game_state["observation"] = info["observation"]
        state.add_observation(message=text, observation_type=ta.ObservationType.GAME_BOARD)
        state.step_info = {
            "reward": reward,
            "invalid_action": info["invalid_action"],
            "events": info["events"],
            "steps_left": info["steps_left"],
        }
        if terminated or truncated:
            success = bool(info["success"])
            reason = (
                "success"
                if success
                else ("the episode ended without success" if terminated else "out of steps")
            )
            state.set_outcome(reward=self._return, reason=reason)
            state.game_info[0].update(success=success, steps=info["steps_used"])
        return state.step()

    def get_board_str(self) -> str:
        return self._board

    def close(self) -> tuple[dict[int, float] | None, dict[int, dict[str, Any]]]:
        return self._require_state().close()

    def _require_state(self) -> ta.SinglePlayerState:
        if self.state is None:
            raise RuntimeError("call reset() first")
        return self.state


class CurrentObservationWrapper(ta.ObservationWrapper):
    """The observation string is the rules prompt plus the latest board; nothing else is
    kept, so it stays the same size within an episode and across resets."""

    def __init__(self, env: ta.Env) -> None:
        super().__init__(env)
        self._prompt = ""
        self._board = ""

    def reset(self, num_players: int = 1, seed: int | None = None) -> None:
        self._prompt = self._board = ""
        return self.env.reset(num_players=num_players, seed=seed)

    def observation(self, player_id: int, observation: Any) -> str:
        for _sender, message, kind in observation or ():
            if kind == ta.ObservationType.PROMPT:
                self._prompt = message
            elif kind == ta.ObservationType.GAME_BOARD:
                self._board = message
        return f"{self._prompt}\n\n{self._board}".strip()


def arena_id(scenario: registry.Scenario) -> str:
    """`textenvs/TreasureHunt-v6` + `treasure-hunt` -> `textenvs-treasure-hunt-v6`."""
    version = scenario.env_id.rsplit("-v", 1)[1]
    return f"textenvs-{scenario.name}-v{version}"


def register_all() -> list[str]:
    """Register every scenario with TextArena (idempotent); returns the ids."""
    ids = []
    for scenario in registry.SCENARIOS:
        env_id = arena_id(scenario)
        if env_id not in ENV_REGISTRY:
            register_with_versions(
                id=env_id,
                entry_point=ENTRY_POINT,
                wrappers={"default": [CurrentObservationWrapper]},
                env_name=scenario.name,
            )
        ids.append(env_id)
    return ids


ARENA_IDS = register_all()
