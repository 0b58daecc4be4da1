"""TRL's own environment interface (`textenvs.adapters.trl`): the same episode scores the
same through it as through `textenvs eval`, in-process and on a real `textenvs serve`;
its rules are what the `llm` agent sends in tools mode; its dataset keeps training and
evaluation seeds apart; and TRL's `GRPOTrainer(environment_factory=...)` trains on it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="the train extra is not installed")

from benchmarks.support import tiny_model
from benchmarks.support.openai_server import OpenAIServer, RecordedRequest, Reply, tool_call
from tests.adapters.conftest import textenvs_eval
from textenvs.adapters.trl import (
    PROMPT,
    EnvironmentFactory,
    TextenvsEnvironment,
    episode_dataset,
    episode_datasets,
)
from textenvs.cli import main
from textenvs.evals.bands import episode_headline
from textenvs.evals.store import read_episodes
from textenvs.service.app import create_app
from textenvs.service.background import serve_in_thread
from textenvs.service.client import ServiceClient

ALL_SEEDS = "0-1"


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    with serve_in_thread(create_app(max_sessions=50)) as url:
        yield url


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`textenvs eval` of the scripted agent on every scenario."""
    out = tmp_path_factory.mktemp("scripted")
    code = main(["eval", "--env", "all", "--agent", "scripted", "--seeds", ALL_SEEDS,
                 "--out", str(out)])  # fmt: skip
    assert code == 0
    return out


def replay(run: Path, environments: EnvironmentFactory) -> list[tuple[dict, TextenvsEnvironment]]:
    """Every episode of `run`, its commands played again through a TRL environment
    that `reset(**row)` started from the dataset row of its scenario and seed."""
    played = []
    for record in read_episodes(run):
        trajectory = json.loads((run / record["trajectory"]).read_text())
        (row,) = episode_dataset(record["env"], record["seed"])
        environment = environments()
        first = environment.reset(**row)
        turns = trajectory["turns"]
        assert first.endswith("\n\n" + turns[0]["observation"])
        for i, turn in enumerate(turns):
            shown = environment.act(turn["command"])
            last = i + 1 == len(turns)
            after = trajectory["final_observation"] if last else turns[i + 1]["observation"]
            assert shown.startswith(after)  # the observation eval's agent saw next
        played.append((record, environment))
    return played


@pytest.mark.parametrize("where", ["in-process", "served"])
def test_episodes_score_as_in_textenvs_eval(scripted_run, service, where):
    url = service if where == "served" else None
    with EnvironmentFactory("headline", env_url=url) as environments:
        played = replay(scripted_run, environments)
        assert {record["env"] for record, _ in played} == {
            "treasure-hunt", "magnetic-field", "em-anomaly", "squad-recon", "megacity"
        }  # fmt: skip
        for record, environment in played:
            result = environment.result
            assert result is not None and environment.done
            assert (result.total_reward, result.success, result.outcome, result.steps) == (
                record["return"], record["success"], record["outcome"], record["steps"]
            )  # fmt: skip
            assert environment.get_reward() == episode_headline(record["env"], record)
            environment.reward = "return"
            assert environment.get_reward() == record["return"]
    if url is not None:  # closing the factory ended every session it opened
        with ServiceClient(url) as client:
            assert client.health()["sessions"] == 0


def act_calls(request: RecordedRequest) -> Reply:
    """A tool call chosen from what the agent was shown (one choice is no action)."""
    shown = "".join(str(m.get("content") or "") for m in request.messages[1:])
    actions = ["north", "east", "reveal", "fly", "west"]
    return tool_call({"action": actions[len(shown) % len(actions)]})


def test_the_rules_are_what_the_llm_agent_sends_in_tools_mode(tmp_path):
    with OpenAIServer(default=act_calls) as server:
        run = tmp_path / "llm"
        records = textenvs_eval(server, run, "treasure-hunt", "0-3", "--action-mode", "tools",
                                "--reasks", "0")  # fmt: skip
        firsts = {
            f"{system['content'].rstrip()}\n\n{user['content']}"
            for system, user in (r.messages for r in server.requests if len(r.messages) == 2)
        }
    environment = TextenvsEnvironment()
    assert {environment.reset(**row) for row in episode_dataset("treasure-hunt", "0-3")} == firsts
    # the replies no parser reads (an action the schema lacks) waste turns here as there
    assert sum(r["invalid_actions"] for r in records.values()) > 0
    with EnvironmentFactory() as environments:
        for record, environment in replay(run, environments):
            assert environment.get_reward() == record["return"]
            assert environment.result.invalid_actions == record["invalid_actions"]


def test_the_dataset_rows_are_what_reset_reads():
    data = episode_datasets("magnetic-field", "0-4", "100-101", {"level": 2})
    assert (len(data["train"]), len(data["eval"])) == (5, 2)
    row = data["eval"][1]
    assert row == {
        "env": "magnetic-field",
        "seed": 101,
        "options": '{"level": 2}',
        "prompt": PROMPT,
    }
    environment = TextenvsEnvironment()
    shown = environment.reset(**row)
    assert environment.result.level == 2
    assert shown.endswith(environment.result.final_observation)
    # every scenario in one dataset: options are JSON text, so rows share a column type
    mixed = episode_dataset("all", "3")
    assert len({row["env"] for row in mixed}) == len(mixed) == 5


def test_overlapping_seeds_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^training and evaluation seeds overlap: 5,9-10$"):
        episode_datasets("em-anomaly", "0-5,9-12", "5,7,9-10")


def test_an_ended_episode_takes_no_more_commands():
    environment = TextenvsEnvironment()
    (row,) = episode_dataset("em-anomaly", 0)
    environment.reset(**row)
    assert environment.act("mark").endswith("do not call act again.")
    with pytest.raises(ValueError, match="the episode is over"):
        environment.act("north")
    with pytest.raises(ValueError, match="reward is one of return, headline"):
        TextenvsEnvironment("success")  # type: ignore[arg-type]


# ----- GRPO with TRL's environment_factory ----------------------------------------------

REPLIES = ["north", "west"]


@pytest.fixture(scope="module")
def tool_caller(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model whose chat template is Qwen 2.5's as TRL ships it (tool calling), and
    which answers every prompt with a call of `act` north or west."""
    folder = tmp_path_factory.mktemp("tool-caller") / "model"
    return tiny_model.make_tool_caller(folder, "treasure-hunt", REPLIES)


@pytest.mark.slow
def test_grpo_trains_through_the_environment_factory(tool_caller, tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer, supports_tool_calling

    monkeypatch.setitem(os.environ, "TRL_EXPERIMENTAL_SILENCE", "1")
    tokenizer = AutoTokenizer.from_pretrained(tool_caller)
    assert supports_tool_calling(tokenizer)
    model = AutoModelForCausalLM.from_pretrained(tool_caller)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    data = episode_datasets("treasure-hunt", "0-3", "100-101")
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), max_steps=1, learning_rate=1e-2, beta=0.0,
        num_generations=4, per_device_train_batch_size=4, gradient_accumulation_steps=2,
        generation_batch_size=8, per_device_eval_batch_size=8,
        max_completion_length=400, max_tool_calling_iterations=4, temperature=1.0,
        use_cpu=True, bf16=False, report_to=[], logging_steps=1, save_strategy="no",
        disable_tqdm=True, seed=0,
    )  # fmt: skip
    with EnvironmentFactory("headline") as environments:
        trainer = GRPOTrainer(
            model=model,
            args=args,
            train_dataset=data["train"],
            eval_dataset=data["eval"],
            processing_class=tokenizer,
            environment_factory=environments,
        )
        trainer.train()
        (logs, *_) = trainer.state.log_history
        played = [e.result for e in trainer.environments]
        rewards = [e.get_reward() for e in trainer.environments]
        evaluated = trainer.evaluate()
        eval_rewards = [e.get_reward() for e in trainer.environments]
        eval_seeds = {e.result.seed for e in trainer.environments}
    assert trainer.state.global_step == 1 and len(played) == 8
    # the model's tool calls stepped the episodes, read by the scenario's parser
    assert logs["tools/call_frequency"] > 0 and logs["tools/failure_frequency"] == 0
    commands = {turn.command for result in played for turn in result.turns}
    assert commands and commands <= set(REPLIES)
    # the reward TRL logged is the episodes' own headline (the exploration's expected success)
    assert logs["rewards/TextenvsEnvironment/mean"] == pytest.approx(sum(rewards) / len(rewards))
    # north explores and west bumps, so a group's episodes differ: GRPO has an advantage
    # to follow, and the step moved the weights
    assert logs["frac_reward_zero_std"] < 1
    assert any(not p.detach().equal(before[name]) for name, p in model.named_parameters())
    # TRL's evaluation plays the eval split through the same environment and reward
    assert eval_seeds == {100, 101}
    mean = sum(eval_rewards) / len(eval_rewards)
    assert evaluated["eval_rewards/TextenvsEnvironment/mean"] == pytest.approx(mean)
