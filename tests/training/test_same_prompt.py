"""A model is evaluated under the prompt it trained on: a training rollout and `textenvs
eval --model DIR` (the checkpoint served on loopback), both playing through the one
`Conversation`, play the same episode turn for turn, with prompts of the same tokens, in
text and in json mode."""

from __future__ import annotations

import json

import pytest
import torch

import textenvs
from textenvs.agents.llm.context import budget_under
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.cli import main
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference.chat import ChatTokens
from textenvs.inference.generation import Sampling
from textenvs.training.rollouts import play

REPLY_TOKENS = 10


def evaluated(tiny_dir, out, mode: str) -> dict:
    code = main(
        ["eval", "--env", "em-anomaly", "--agent", "llm", "--model", str(tiny_dir), "--seeds",
         "3", "--temperature", "0", "--max-tokens", str(REPLY_TOKENS), "--action-mode", mode,
         "--json-reasoning", "0", "--concurrency", "1", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    (path,) = (out / "trajectories").rglob("*.json")
    return json.loads(path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["text", "json"])
def test_training_and_eval_play_the_same_episode_from_the_same_prompts(
    tiny, tiny_dir, tmp_path, mode
):
    episode = evaluated(tiny_dir, tmp_path / "run", mode)
    model, tokenizer = tiny
    # a training episode is one sequence, so it ends where eval first cut the history
    cut = [any(p["cut"] for p in turn["record"]["prompts"]) for turn in episode["turns"]]
    turns = cut.index(True) if True in cut else len(cut)
    settings = conversation_settings(mode, 0, prompt_budget=budget_under(32768, REPLY_TOKENS))
    (rollout,) = play(
        model,
        ChatTokens(tokenizer),
        [EpisodeSpec("em-anomaly", 3)],
        textenvs.make,
        settings,
        Sampling(max_new_tokens=REPLY_TOKENS, temperature=0),
        max_turns=turns,
        generator=torch.Generator().manual_seed(0),
    )
    trained = rollout.result.to_dict()
    assert turns >= 10 and len(trained["turns"]) == turns
    for ours, theirs in zip(trained["turns"], episode["turns"][:turns], strict=True):
        for field in ("command", "invalid_action", "reasks", "read_as", "observation"):
            assert ours[field] == theirs[field], field
        # the same prompt tokens: the server counted each request's whole prompt
        for count in ("prompt_tokens", "completion_tokens", "requests"):
            assert ours["usage"][count] == theirs["usage"][count], count
    if mode == "json":
        assert all(turn["raw"].startswith("{") for turn in episode["turns"])
