"""A policy gradient on recorded episodes (`--reward-weighted`, `training/weighting.py`):
each episode weighs its success minus the runs' mean (as many lost episodes as won
drawn) or minus its seed's mean where a seed was played several times, a token stops
moving once its probability is `CLIP` past its sampled one, and the weight and the
sampled log-probabilities reach each sequence's loss through TRL's own collator and
trainer."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from datasets import Dataset
from trl import SFTConfig

import textenvs
from textenvs.agents.llm.conversation import conversation_settings
from textenvs.episodes.specs import EpisodeSpec
from textenvs.inference import models
from textenvs.inference.chat import ChatTokens
from textenvs.training import credit
from textenvs.training.demonstrations import RecordedEpisode, demonstrate
from textenvs.training.settings import TrainingError, TrainSettings
from textenvs.training.sft import SharedPrefixTrainer, shared_prefix
from textenvs.training.trainers import decoder_layers, freeze_below
from textenvs.training.weighting import (
    CLIP,
    PolicyDrift,
    clipped_policy_loss,
    seed_relative,
    seed_value_changes,
    success_weighted,
    turn_weights,
    vocabulary_kl,
)


def recorded(successes: list[bool]) -> list[RecordedEpisode]:
    return [
        RecordedEpisode(EpisodeSpec("em-anomaly", 2000 + n), ("north",), won, float(won))
        for n, won in enumerate(successes)
    ]


def test_each_episode_weighs_its_success_minus_the_mean():
    episodes = recorded([False, True, False, False, True, False, False, True, False, False])
    chosen, weights = success_weighted(episodes, rng_seed=0)
    won = [e for e in chosen if e.success]
    assert len(won) == 3 and len(chosen) == 6  # the 3 won and 3 of the 7 lost
    assert [e.spec.seed for e in chosen] == sorted(e.spec.seed for e in chosen)  # as recorded
    for episode, weight in zip(chosen, weights, strict=True):
        # p = 0.3: a won one 1 - p, a drawn lost one -p for each of the 7 / 3 it stands for
        assert weight == pytest.approx(0.7 if episode.success else -0.3 * 7 / 3)
    assert sum(weights) == pytest.approx(0)  # the baseline centres the batch
    assert success_weighted(episodes, rng_seed=0) == (chosen, weights)
    draws = {tuple(e.spec.seed for e in success_weighted(episodes, seed)[0]) for seed in range(9)}
    assert len(draws) > 1  # the draw follows the run's seed


def test_a_seed_played_several_times_is_its_own_baseline():
    """GRPO's group baseline: each episode weighs its success minus its seed's mean, and a
    seed won every time or lost every time teaches nothing and is left out."""
    plays = {2000: [True, False, False, False], 2001: [False] * 4, 2002: [True, True, False, True]}
    plays[2003] = [True] * 4
    episodes = [
        RecordedEpisode(EpisodeSpec("em-anomaly", seed), ("north",), won, float(won))
        for seed, outcomes in plays.items()
        for won in outcomes
    ]
    chosen, weights = success_weighted(episodes, rng_seed=0)
    assert [e.spec.seed for e in chosen] == [2000] * 4 + [2002] * 4  # recorded order
    assert weights == pytest.approx([0.75, -0.25, -0.25, -0.25, 0.25, 0.25, -0.75, 0.25])
    assert success_weighted(episodes, rng_seed=5) == (chosen, weights)  # nothing is drawn
    alike = [e for e in episodes if e.spec.seed in (2001, 2003)]
    with pytest.raises(ValueError, match="won every time or lost every time"):
        success_weighted(alike, rng_seed=0)


def test_an_episode_counts_once_however_many_turns_it_took():
    """A won episode of 8 turns and a lost one of 30 (as they run at the step limit) push
    as much each, and a turn weighs its episode's weight on average."""
    shares = turn_weights([0.9, -0.9], [8, 30])
    assert [len(share) for share in shares] == [8, 30]
    assert sum(shares[0]) == pytest.approx(-sum(shares[1]))
    assert len(set(shares[0])) == len(set(shares[1])) == 1  # evenly within an episode
    every = [abs(weight) for share in shares for weight in share]
    assert sum(every) / len(every) == pytest.approx(0.9)
    assert turn_weights([0.5, -0.5], [3, 0]) == [[pytest.approx(0.25)] * 3, []]


def test_each_turn_weighs_the_change_its_command_made_in_its_seeds_value():
    """--credit turn: a seed's value of an observation is the share won among its episodes
    shown it. Four episodes of one seed open alike (value 1/4); A and B go one way (1/2),
    C and D another (0); there A wins and B loses. B's first command led towards the win
    and is drawn up though B lost; only its parting from A is pushed down, and C's and D's
    turns after their first weigh nothing. An episode's turns sum to its episode credit."""
    paths = {"A": ("s", "a1", "a2"), "B": ("s", "a1", "b2"), "C": ("s", "c1", "c2")}
    paths["D"] = ("s", "c1", "d2")
    won = {"A": True, "B": False, "C": False, "D": False}
    mixed = [
        RecordedEpisode(EpisodeSpec("em-anomaly", 2000), (name,) * 3, won[name], float(won[name]),
                        observations=path)
        for name, path in paths.items()
    ]  # fmt: skip
    alike = [  # a seed lost every time, and a seed played once: nothing to compare
        RecordedEpisode(EpisodeSpec("em-anomaly", seed), ("north",), False, 0.0,
                        observations=("s",))
        for seed in (2001, 2001, 2002)
    ]  # fmt: skip
    chosen, weights = seed_value_changes([*mixed, *alike])
    assert chosen == mixed
    # quarters and halves: exact in floating point
    assert weights == [[0.25, 0.5, 0.0], [0.25, -0.5, 0.0], [-0.25, 0.0, 0.0], [-0.25, 0.0, 0.0]]
    credit = seed_relative(mixed)[1]
    assert [sum(turns) for turns in weights] == pytest.approx(credit)
    with pytest.raises(ValueError, match="no seed was both won and lost"):
        seed_value_changes(alike)
    with pytest.raises(ValueError, match="recorded without its observations"):
        seed_value_changes(recorded([True, False]))


def test_turn_credit_with_anchor_seeds_feeds_every_credited_turn_and_as_many_anchors():
    """--credit turn --kl-penalty --anchor-seeds: the anchor seeds' episodes are anchors
    alone (every turn weighs 0, though their seed was won and lost), each credited turn is
    fed once at its weight, and as many turns of the anchor seeds' episodes are drawn
    beside them, weighing 0, the same each run."""
    paths = {"A": ("s", "a1", "a2"), "B": ("s", "a1", "b2"), "C": ("s", "c1", "c2")}
    won = {"A": True, "B": False, "C": False}

    def played(seed: int) -> list[RecordedEpisode]:
        return [
            RecordedEpisode(EpisodeSpec("em-anomaly", seed), (name,) * 3, won[name],
                            float(won[name]), observations=path)
            for name, path in paths.items()
        ]  # fmt: skip

    given = dict(
        env="em-anomaly", model="m", seeds=[2000, 2001], eval_seeds=[], method="sft",
        reward_weighted=True, credit="turn", kl_penalty=0.1, steps=1, seeds_per_step=2,
    )  # fmt: skip
    episodes = [*played(2000), *played(2001)]
    settings = TrainSettings(**given, anchor_seeds=[2001])
    chosen, weights = credit.replayed_choice(settings, episodes)
    assert [e.spec.seed for e in chosen] == [2000] * 3 + [2001] * 3
    assert weights[3:] == [[0.0] * 3] * 3  # won and lost, but anchors alone
    assert weights[:3] == seed_value_changes(played(2000))[1]
    fed, draws = credit.fed_choice(settings, chosen, weights)
    assert isinstance(draws, credit.Draws)
    credited = [(fed[at].spec.seed, turn, w) for at, turn, w in draws.turns if w]
    every = [(2000, turn, w) for turns in weights[:3] for turn, w in enumerate(turns) if w]
    assert sorted(credited) == sorted(every)  # each once
    anchors = [fed[at].spec.seed for at, _, w in draws.turns if not w]
    assert len(anchors) == len(credited) and set(anchors) == {2001}
    assert credit.fed_choice(settings, chosen, weights) == (fed, draws)
    # without --kl-penalty, or without --anchor-seeds, turn credit is as it was
    for plain in (TrainSettings(**given), TrainSettings(**{**given, "kl_penalty": 0.0})):
        assert not plain.anchored
        assert credit.replayed_choice(plain, episodes) == seed_value_changes(episodes)
        assert (
            credit.fed_choice(plain, *seed_value_changes(episodes))[1]
            == (seed_value_changes(episodes)[1])
        )


@pytest.mark.parametrize("won", [True, False])
def test_runs_all_won_or_all_lost_have_nothing_to_weigh(won):
    with pytest.raises(ValueError, match=f"was {'won' if won else 'lost'}"):
        success_weighted(recorded([won] * 4), rng_seed=0)


def weighted_dataset(tokenizer, weights: list[float]) -> Dataset:
    """The first turns of a reactive EM Anomaly episode, one sequence a turn, weighted."""
    settings = conversation_settings(prompt_budget=7000, history=0)
    shown = demonstrate(
        EpisodeSpec("em-anomaly", 4), "reactive", textenvs.make, settings, ChatTokens(tokenizer)
    )
    rows = shown.sequences[: len(weights)]
    return Dataset.from_dict(
        {"input_ids": [r.ids for r in rows], "labels": [r.labels for r in rows], "weight": weights}
    )


def weighted_trainer(model, tokenizer, dataset, tmp_path, reference, shared=True, **given):
    config = SFTConfig(
        output_dir=str(tmp_path), use_cpu=True, report_to=[], max_length=None,
        per_device_train_batch_size=1, remove_unused_columns=False,
    )  # fmt: skip
    return SharedPrefixTrainer(
        model=model,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        prefix=shared_prefix(dataset) if shared else [],
        reference=reference,
        **given,
    )


@pytest.mark.parametrize("shared", [True, False])
def test_each_sequence_loss_is_multiplied_by_its_weight(tiny, tmp_path, shared):
    """Through the trainer's own data loader (TRL's collator, wrapped) to `compute_loss`,
    with the rules prompt fed once (`shared`) or whole."""
    model, tokenizer = tiny
    weights = [0.5, -1.5, 2.0]
    dataset = weighted_dataset(tokenizer, weights)
    # every ratio 1
    trainer = weighted_trainer(model, tokenizer, dataset, tmp_path, copy.deepcopy(model), shared)
    seen = []
    for batch in trainer.get_train_dataloader():
        weight = float(batch["weight"])
        plain = {"input_ids": batch["input_ids"], "labels": batch["labels"]}
        with torch.no_grad():
            weighted = float(trainer.compute_loss(model, batch))
            whole = float(model(**plain).loss)
        assert weighted == pytest.approx(weight * whole, rel=1e-4)
        seen.append(weight)
    assert sorted(seen) == sorted(weights)


@pytest.mark.parametrize("shared", [True, False])
def test_the_reference_above_a_frozen_bottom_scores_as_the_whole_starting_model(
    tiny_dir, tmp_path, shared
):
    """With --train-layers, the reference keeps only its layers above the trained model's
    frozen bottom and reads the trained model's hidden states: the starting policy's
    log-probabilities all the same, after the trained top has moved. (Each model loaded
    afresh, as `build_trainer` loads the reference: a trainer wraps its model's `forward`,
    and a deep copy of a wrapped model still calls the original.)"""
    trained, tokenizer = models.load(str(tiny_dir))
    dataset = weighted_dataset(tokenizer, [0.5, -1.5])
    layers = len(decoder_layers(trained))
    freeze_below(trained, 1)
    with torch.no_grad():  # as if a step had moved what it trains
        for parameter in trained.parameters():
            if parameter.requires_grad:
                parameter.add_(0.05 * torch.randn_like(parameter))
    reference = models.load(str(tiny_dir))[0]
    sharing = weighted_trainer(trained, tokenizer, dataset, tmp_path / "a", reference, shared)
    assert sharing.reference_top is not None and sharing.reference_top.shared == layers - 1
    assert len(decoder_layers(sharing.reference)) == 1
    start = models.load(str(tiny_dir))[0]  # every layer trained: nothing to share
    whole = weighted_trainer(
        start, tokenizer, dataset, tmp_path / "b", models.load(str(tiny_dir))[0], shared
    )
    assert whole.reference_top is None
    for batch in sharing.get_train_dataloader():
        ids, labels = batch["input_ids"], batch["labels"]
        with torch.no_grad():
            now, outputs = sharing.trained_logprobs(trained, ids, labels)
            sampled = sharing.reference_logprobs(ids, labels, outputs)
            expected = whole.reference_logprobs(ids, labels, None)
        torch.testing.assert_close(sampled, expected, rtol=0, atol=1e-5)
        assert (now.chosen - sampled.chosen).abs().max() > 1e-3  # another policy


def test_a_reference_whose_bottom_is_not_the_trained_models_is_refused(tiny_dir, tmp_path):
    trained, tokenizer = models.load(str(tiny_dir))
    freeze_below(trained, 1)
    other = models.load(str(tiny_dir))[0]
    with torch.no_grad():
        decoder_layers(other)[0].mlp.up_proj.weight.add_(0.1)
    dataset = weighted_dataset(tokenizer, [1.0])
    with pytest.raises(TrainingError, match="bottom layers do not give"):
        weighted_trainer(trained, tokenizer, dataset, tmp_path, other)


@pytest.mark.parametrize("clip", [CLIP, 0.45])
@pytest.mark.parametrize("advantage", [0.8, -0.8])
def test_a_token_stops_moving_once_its_probability_is_clip_past_its_sampled_one(advantage, clip):
    logprobs = torch.log(torch.tensor([0.5, 0.5, 0.5])).requires_grad_()
    push = 1 if advantage > 0 else -1  # the side the advantage moves a probability to
    # ratios: 1, within the clip on the pushed side, past it
    ratios = torch.tensor([1.0, 1 + push * clip / 2, 1 + push * clip * 2])
    sampled = logprobs.detach() - ratios.log()
    loss = clipped_policy_loss(logprobs, sampled, advantage, clip)
    loss.backward()
    # d loss / d log p = -advantage * ratio / n where not past, 0 past
    expected = [-advantage * float(r) / 3 for r in ratios[:2]] + [0.0]
    assert logprobs.grad.tolist() == pytest.approx(expected)
    cross_entropy = -logprobs.detach()
    assert float(loss) == pytest.approx(
        float((advantage * ratios[:2] * cross_entropy[:2]).sum() / 3)
    )
    # on the other side a token is never held: the loss pulls it back
    back = clipped_policy_loss(logprobs, logprobs.detach() + push * 2.0, advantage)
    assert float(back) != 0


def test_a_wider_clip_moves_a_token_the_default_holds():
    logprobs = torch.log(torch.tensor([0.5])).requires_grad_()
    sampled = logprobs.detach() - torch.log(torch.tensor([1.3]))  # raised 1.3 times
    clipped_policy_loss(logprobs, sampled, 1.0).backward()
    assert logprobs.grad.tolist() == [0.0]
    logprobs.grad = None
    clipped_policy_loss(logprobs, sampled, 1.0, clip=0.5).backward()
    assert logprobs.grad.tolist() == pytest.approx([-1.3])


def test_the_vocabulary_kl_is_the_divergence_from_the_reference_at_each_token():
    reference = torch.log(torch.tensor([[0.5, 0.5, 1e-30], [0.25, 0.25, 0.5]]))
    current = torch.log(torch.tensor([[0.25, 0.75, 1e-30], [0.25, 0.25, 0.5]]))
    current.requires_grad_()
    kl = vocabulary_kl(reference, current)
    by_hand = (0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)) / 2  # row 2: 0
    assert float(kl.detach()) == pytest.approx(by_hand)
    assert float(vocabulary_kl(reference, reference.clone())) == 0
    kl.backward()  # d/d log q of -sum p log q: -p / rows, pulling q towards p
    assert current.grad[0, 0] < 0 and current.grad[0, 1] < 0
    assert current.grad[1].tolist() == pytest.approx([-0.125, -0.125, -0.25])


def test_the_kl_penalty_adds_its_share_of_the_divergence_at_the_trained_tokens(tiny_dir, tmp_path):
    """--kl-penalty BETA: each sequence's loss is the clipped policy loss plus BETA times
    the divergence of the trained model from the reference over the whole vocabulary, 0
    while the two are one model and positive once the trained one has moved."""
    trained, tokenizer = models.load(str(tiny_dir))
    dataset = weighted_dataset(tokenizer, [0.5, -1.5])
    reference = models.load(str(tiny_dir))[0]
    plain = weighted_trainer(trained, tokenizer, dataset, tmp_path / "a", reference)
    penalised = weighted_trainer(
        trained, tokenizer, dataset, tmp_path / "b", models.load(str(tiny_dir))[0],
        kl_penalty=2.0,
    )  # fmt: skip
    batches = list(penalised.get_train_dataloader())
    with torch.no_grad():
        for batch in batches:  # one model: nothing added
            same = float(penalised.compute_loss(trained, dict(batch)))
            assert same == pytest.approx(float(plain.compute_loss(trained, dict(batch))))
        for parameter in trained.parameters():  # as if a step had moved it
            parameter.add_(0.05 * torch.randn_like(parameter))
        for batch in batches:
            ids, labels = batch["input_ids"], batch["labels"]
            now, outputs = penalised.trained_logprobs(trained, ids, labels)
            kl = float(vocabulary_kl(penalised.reference_logprobs(ids, labels, outputs).every,
                                     now.every))  # fmt: skip
            assert kl > 1e-4
            with_penalty = float(penalised.compute_loss(trained, dict(batch)))
            without = float(plain.compute_loss(trained, dict(batch)))
            assert with_penalty == pytest.approx(without + 2.0 * kl, rel=1e-4)


def test_the_kl_penalty_at_the_anchors_alone_leaves_the_relabelled_turns_unpulled(
    tiny_dir, tmp_path
):
    """--kl-anchors-only: the penalty is added where a sequence weighs 0 (an anchor) and
    not where it weighs something (a relabelled turn, free to rise as its push takes it)."""
    trained, tokenizer = models.load(str(tiny_dir))
    dataset = weighted_dataset(tokenizer, [0.0, 0.5])
    plain = weighted_trainer(
        trained, tokenizer, dataset, tmp_path / "a", models.load(str(tiny_dir))[0]
    )
    anchored = weighted_trainer(
        trained, tokenizer, dataset, tmp_path / "b", models.load(str(tiny_dir))[0],
        kl_penalty=2.0, kl_anchors_only=True,
    )  # fmt: skip
    with torch.no_grad():
        for parameter in trained.parameters():  # as if a step had moved it
            parameter.add_(0.05 * torch.randn_like(parameter))
        for row, pulled in [(0, True), (1, False)]:
            fed = {name: torch.tensor([dataset[row][name]]) for name in ("input_ids", "labels")}
            weight = torch.tensor(dataset[row]["weight"])
            now, outputs = anchored.trained_logprobs(trained, fed["input_ids"], fed["labels"])
            then = anchored.reference_logprobs(fed["input_ids"], fed["labels"], outputs)
            kl = float(vocabulary_kl(then.every, now.every))
            assert kl > 1e-4
            with_penalty = float(anchored.compute_loss(trained, {**fed, "weight": weight}))
            without = float(plain.compute_loss(trained, {**fed, "weight": weight}))
            assert with_penalty == pytest.approx(without + (2.0 * kl if pulled else 0), rel=1e-4)


@pytest.mark.parametrize("at_anchors", [False, True])
def test_the_drift_is_measured_at_every_trained_reply_or_at_the_anchors_alone(
    tiny_dir, tmp_path, at_anchors
):
    """--credit lookahead's drift (`drift_at_anchors`) is the divergence over the
    vocabulary where the sequence weighs 0 (an anchor, held by --kl-penalty, whose reply
    may be random play's), not at a relabelled reply, whose rise is the move the run asks
    for; otherwise the estimate at every trained token."""
    trained, tokenizer = models.load(str(tiny_dir))
    dataset = weighted_dataset(tokenizer, [0.0, 0.2, 0.0])
    reference = models.load(str(tiny_dir))[0]
    trainer = weighted_trainer(
        trained, tokenizer, dataset, tmp_path, reference, kl_penalty=0.1,
        drift_at_anchors=at_anchors,
    )  # fmt: skip
    with torch.no_grad():
        for parameter in trained.parameters():  # as if a step had moved it
            parameter.add_(0.05 * torch.randn_like(parameter))
    drift = PolicyDrift()
    for row in range(3):
        fed = {name: torch.tensor([dataset[row][name]]) for name in ("input_ids", "labels")}
        with torch.no_grad():
            trainer.compute_loss(trained, {**fed, "weight": torch.tensor(dataset[row]["weight"])})
            now, outputs = trainer.trained_logprobs(trained, fed["input_ids"], fed["labels"])
            then = trainer.reference_logprobs(fed["input_ids"], fed["labels"], outputs)
        if not at_anchors:
            drift.add(now.chosen, then.chosen)
        elif row != 1:  # the relabelled reply is not measured
            drift.add_divergence(float(vocabulary_kl(then.every, now.every)), len(now.chosen))
    expected = drift.take()
    assert expected > 0
    assert trainer.drift_limit.drift.take() == pytest.approx(expected, rel=1e-5)


def test_the_drift_is_the_mean_kl_estimate_over_the_tokens_since_last_taken():
    """ratio - 1 - log ratio per token (never negative, 0 only where nothing moved),
    averaged over every token added since the last `take`."""
    drift = PolicyDrift()
    sampled = torch.log(torch.tensor([0.5, 0.5, 0.2]))
    drift.add(sampled.clone(), sampled)
    assert drift.take() == 0.0
    moved = torch.log(torch.tensor([0.6, 0.4, 0.2]))
    drift.add(moved, sampled)
    drift.add(sampled[:1], sampled[:1])
    ratios = [1.2, 0.8, 1.0, 1.0]
    expected = sum(r - 1 - math.log(r) for r in ratios) / 4
    assert drift.take() == pytest.approx(expected)
    assert drift.take() == 0.0  # taken: counting starts again
