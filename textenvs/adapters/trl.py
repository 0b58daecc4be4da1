"""TRL's own agentic interface: textenvs scenarios for `GRPOTrainer(environment_factory=...)`.

TRL (1.16) makes one environment instance per rollout and calls `reset(**row)` with
the dataset row's columns; the string it returns is appended to the prompt's last user
message. The instance's public methods become the model's tools, and `get_reward()`
scores the finished rollout.

- `TextenvsEnvironment.reset(env=..., seed=..., options=...)` starts the episode the
  row names and returns the rules and the first observation.
- The model acts through one tool, `act(command)`, which steps the episode and returns
  the next observation (saying when the episode is over). One text command rather than
  tools derived from each action schema: the command is read by the scenario's own
  parser, as `textenvs eval` reads a reply (grammar, aliases, the reason a command is
  rejected); one class serves every scenario, so one dataset may mix them (TRL reads the
  tools once, from the class); and the richer schemas (Squad Recon's five optional
  orders, Megacity's cell lists) do not fit the docstring-typed signatures TRL turns
  into tool schemas.
- `get_reward()` is the episode's return, or its headline metric (`reward="headline"`),
  scored by `textenvs eval`'s own code.

The rules are the system prompt `textenvs eval --agent llm --action-mode tools
--reasks 0` sends (a command that cannot be read wastes the turn; nothing is re-asked).
Episodes play in this process, or on a `textenvs serve` service (`env_url`). A checkpoint
trained here plays in `textenvs eval --model DIR --action-mode tools`, whose agent reads
an `act(command)` call as it reads one with the action schema's fields.

    from trl import GRPOConfig, GRPOTrainer
    from textenvs.adapters.trl import EnvironmentFactory, episode_datasets, write_training_record

    data = episode_datasets("em-anomaly", seeds="0-999", eval_seeds="1000-1099")
    with EnvironmentFactory(reward="headline") as environments:
        trainer = GRPOTrainer(model=..., args=GRPOConfig(...), train_dataset=data["train"],
                              environment_factory=environments)
        trainer.train()
    trainer.save_model(OUT)
    write_training_record(OUT, data)  # `textenvs eval --model OUT` refuses the seeds

The model's chat template must render tools (`textenvs save-model --tools-template`), and
a small model needs a warm start that calls `act` (`textenvs train --method sft
--action-mode tools`): docs/adapters.md, "TRL".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from datasets import Dataset, DatasetDict

import textenvs
from textenvs.core.registry import episode_level
from textenvs.episodes.envs import EnvFactory
from textenvs.episodes.protocol import Decision
from textenvs.episodes.record import TURN_LIMIT, EpisodeResult
from textenvs.episodes.specs import EpisodeSpec, Seeds, episode_specs, seed_list, seed_ranges
from textenvs.evals.records import result_headline
from textenvs.prompts import Mode, prompt_name, system_prompt
from textenvs.service.client import RemoteEnvFactory, remote_env_factory

Reward = Literal["return", "headline"]
REWARDS: tuple[str, ...] = ("return", "headline")
#: the prompt column of every row: an empty user message that `reset` fills in
PROMPT = [{"role": "user", "content": ""}]
AGENT_NAME = "trl"


# ----- what this adapter takes from the rest of textenvs (one function each) ----------


def episode_rules(env: str, options: dict[str, Any] | None) -> str:
    """The rules of an episode, as `textenvs eval --agent llm --action-mode tools
    --reasks 0` sends them (its system prompt)."""
    return system_prompt(prompt_name(env, options), Mode(reasks=0, answer="tools"))


def env_maker(env_url: str | None, token: str | None = None) -> EnvFactory:
    """`make(scenario)`: an in-process env, or one on the service at `env_url`."""
    if env_url is None:
        return textenvs.make
    return remote_env_factory(env_url, token=token)


# ----- the environment ----------------------------------------------------------------


def checked_reward(reward: str) -> Reward:
    if reward not in REWARDS:
        raise ValueError(f"reward is one of {', '.join(REWARDS)}, not {reward!r}")
    return reward  # type: ignore[return-value]


class TextenvsEnvironment:
    """One rollout's episode. Its only public methods are TRL's: `reset`, `get_reward`
    and the tool `act` (every other public method would become a tool)."""

    def __init__(self, reward: Reward = "return", make_env: EnvFactory | None = None) -> None:
        self.reward = checked_reward(reward)
        self._make_env = make_env or textenvs.make
        self._env: Any = None
        self._env_name = ""
        self._result: EpisodeResult | None = None
        self._observation = ""
        self._done = True

    def reset(
        self, *, env: str, seed: int, options: str | dict[str, Any] | None = None, **row: Any
    ) -> str:
        """Start the episode of a dataset row (`env`, `seed`, `options` as JSON text or a
        dict; other columns, such as `prompt`, are not read). Returns the rules, a blank
        line and the first observation."""
        spec = EpisodeSpec.from_row({"env": env, "seed": seed, "options": options})
        if self._env is None or self._env_name != env:
            self._close()
            self._env, self._env_name = self._make_env(env), env
        observation, info = self._env.reset(seed=spec.seed, options=spec.options)
        level = episode_level(env, spec.options, getattr(self._env, "level", None))
        self._result = EpisodeResult(
            env=env, seed=spec.seed, agent=AGENT_NAME, outcome=TURN_LIMIT, level=level
        )
        self._result.final_observation = observation
        self._result.final_info_observation = info.get("observation") or {}
        self._observation, self._done = observation, False
        return f"{episode_rules(env, spec.options).rstrip()}\n\n{observation}"

    def act(self, command: str) -> str:
        """Send one command to the environment.

        Args:
            command: One command for this turn, in a form the rules list.

        Returns:
            The next observation.
        """
        if self._env is None or self._result is None or self._done:
            raise ValueError("the episode is over: do not call act again")
        stepped = self._env.step(command)
        self._done = self._result.stepped(self._observation, Decision(command), stepped)
        self._result.ended(stepped[0], stepped[4])
        self._observation = stepped[0]
        if not self._done:
            return self._observation
        outcome = self._result.outcome
        return f"{self._observation}\n\nThe episode is over ({outcome}): do not call act again."

    def get_reward(self) -> float:
        """The episode's return, or its headline metric (0 where the episode does not
        say), as `textenvs eval` scores it."""
        if self._result is None:
            raise ValueError("no episode was played: call reset() first")
        if self.reward == "return":
            return float(self._result.total_reward)
        value = result_headline(self._result)
        return 0.0 if value is None else float(value)

    @property
    def result(self) -> EpisodeResult | None:
        """The episode so far, as `textenvs eval` records one (None before `reset`)."""
        return self._result

    @property
    def done(self) -> bool:
        return self._done

    def _close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None


class EnvironmentFactory:
    """`GRPOTrainer(environment_factory=...)`: makes the environments TRL asks for,
    in this process or on the service at `env_url`, and closes them (`close()`, or use
    it as a context manager) so a service's sessions do not outlive training."""

    def __init__(
        self, reward: Reward = "return", *, env_url: str | None = None, token: str | None = None
    ) -> None:
        self.reward = checked_reward(reward)  # a bad one fails here, not in the trainer
        self.make_env = env_maker(env_url, token)
        self.environments: list[TextenvsEnvironment] = []

    def __call__(self) -> TextenvsEnvironment:
        environment = TextenvsEnvironment(self.reward, self.make_env)
        self.environments.append(environment)
        return environment

    def close(self) -> None:
        for environment in self.environments:
            environment._close()
        if isinstance(self.make_env, RemoteEnvFactory):  # a service's shared connection pool
            self.make_env.close()

    def __enter__(self) -> EnvironmentFactory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ----- the dataset ----------------------------------------------------------------------


def episode_dataset(env: str, seeds: Seeds, options: dict[str, Any] | None = None) -> Dataset:
    """One row per episode of `env` (a scenario, a comma list or "all") on `seeds`
    ("0-99", "3,7", ints): `env`, `seed`, `options` (JSON text: rows of several
    scenarios share one column type) and TRL's `prompt` column, which `reset` fills."""
    specs = episode_specs(env, seeds, options)
    return Dataset.from_list([_row(spec) for spec in specs])


def episode_datasets(
    env: str, seeds: Seeds, eval_seeds: Seeds, options: dict[str, Any] | None = None
) -> DatasetDict:
    """`train` (`seeds`) and `eval` (`eval_seeds`) datasets of `env`; a seed in both is
    refused (`ValueError`), since a checkpoint is evaluated on seeds it never saw."""
    shared = sorted(set(seed_list(seeds)) & set(seed_list(eval_seeds)))
    if shared:
        raise ValueError(f"training and evaluation seeds overlap: {seed_ranges(shared)}")
    return DatasetDict(
        train=episode_dataset(env, seeds, options), eval=episode_dataset(env, eval_seeds, options)
    )


# ----- the trained checkpoint -----------------------------------------------------------


def write_training_record(
    folder: str | Path,
    data: DatasetDict,
    *,
    base: str | Path | None = None,
    reward: Reward | None = None,
) -> Path:
    """Write the record of a checkpoint trained on `data` (`episode_datasets`) beside its
    weights (`textenvs-training.json`, as `textenvs train` writes one): its scenario, its
    training seeds (and those of `base`, the model it started from, when that has a
    record) and held-out seeds, and how it plays: tools mode, no re-asks (the rules it
    trained under). `textenvs eval --model FOLDER` then refuses its training seeds and
    plays it as it trained. Returns the record's path."""
    from textenvs.inference import models

    envs = sorted(set(data["train"]["env"]))
    earlier = models.trained_seeds(models.read_record(base) or {}) if base else []
    record = {
        "textenvs_training": 1,
        "trainer": "trl-environment-factory",
        "env": ",".join(envs),
        "model": str(base) if base else None,
        "seeds": seed_ranges(sorted(set(data["train"]["seed"]))),
        "eval_seeds": seed_ranges(sorted(set(data["eval"]["seed"]))) if "eval" in data else "",
        "earlier_seeds": seed_ranges(earlier),
        "reward": reward,
        "action_mode": "tools",
        "conversation": {"reasks": 0},
    }
    path = Path(folder)
    models.write_record(path, record)
    return path / models.RECORD_FILE


def _row(spec: EpisodeSpec) -> dict[str, Any]:
    return {**spec.row(), "prompt": PROMPT}
