"""The data hooks do what they say: gold laws reach the batches with the stated
frequencies, loss weights average 1 and follow 1/rho, and the loss uses them."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from lostmid.behaviour.training import (
    RetrievalBatches,
    RetrievalTask,
    masked_next_token_loss,
    sequence_length,
)
from lostmid.errors import UserError
from lostmid.remedies import get_remedy, positions
from lostmid.remedies.base import Setting


def _compact_golds(row: list[int], queries: int, chars: int = 1) -> list[int]:
    """Brute force: parse ``{kv,...}k v k v ...`` and return the gold index of each query."""
    text = bytes(row).decode()
    body, tail = text[1:].split("}")
    keys = [pair[:chars] for pair in body.split(",")]
    asked = [tail[2 * chars * q : 2 * chars * q + chars] for q in range(queries)]
    return [keys.index(k) for k in asked]


def _setting(task: RetrievalTask, layers: int = 2, steps: int = 100, alpha: float = 0.5) -> Setting:
    example = task.example(0, 0, 0)
    return Setting(
        pairs=task.pairs,
        spans=example.spans,
        prefix=example.spans[-1][1] + 1,
        prompt_length=len(example.prompt),
        layers=layers,
        steps=steps,
        alpha=alpha,
        queries=task.queries,
    )


def test_record_centres_are_the_middle_of_each_record_in_the_prompt() -> None:
    task = RetrievalTask(task="kv", pairs=5, key_chars=2, style="compact")
    example = task.example(0, 3, 2)
    t = len(example.prompt)
    x = positions.record_centres(example.spans, t)
    for (key, value), xg in zip(example.records, x, strict=True):
        start = example.prompt.index(key + value)  # 0-indexed first character
        first, last = start + 1, start + len(key + value)  # 1-indexed
        assert xg == pytest.approx((first + last) / 2 / t)


def test_oversampling_frequencies_match_the_law() -> None:
    task = RetrievalTask(task="kv", pairs=6, key_chars=1, style="compact", queries=1)
    law = positions.valley_bump(positions.record_centres(*_prompt_geometry(task)), boost=3.0)
    sampler = RetrievalBatches(
        task, batch_size=100, seed=0, length=sequence_length(task), gold_probs=lambda s: law
    )
    counts = np.zeros(6)
    for step in range(40):
        for row in sampler.batch(step).tolist():
            counts[_compact_golds(row, 1)[0]] += 1
    n = counts.sum()
    # each count is binomial(n, p_g): within 4.5 standard deviations
    assert np.all(np.abs(counts - n * law) < 4.5 * np.sqrt(n * law * (1 - law)))
    assert law[2] > 2 * law[0]  # the middle is drawn much more often than the ends


def _prompt_geometry(task: RetrievalTask) -> tuple[tuple[tuple[int, int], ...], int]:
    example = task.example(0, 0, 0)
    return example.spans, len(example.prompt)


def test_further_queries_follow_successive_sampling_without_replacement() -> None:
    """The marginal of every query of a row, against the exact successive-sampling
    marginals enumerated by brute force."""
    task = RetrievalTask(task="kv", pairs=4, key_chars=1, style="compact", queries=2)
    law = np.array([0.1, 0.4, 0.3, 0.2])
    sampler = RetrievalBatches(
        task, batch_size=100, seed=1, length=sequence_length(task), gold_probs=lambda s: law
    )
    expected = np.zeros((2, 4))
    for first, second in itertools.permutations(range(4), 2):
        p = law[first] * law[second] / (1 - law[first])
        expected[0, first] += p
        expected[1, second] += p
    counts = np.zeros((2, 4))
    for step in range(30):
        for row in sampler.batch(step).tolist():
            for q, g in enumerate(_compact_golds(row, 2)):
                counts[q, g] += 1
    n = counts[0].sum()
    assert np.all(np.abs(counts - n * expected) < 4.5 * np.sqrt(n * expected * (1 - expected)))


def test_curriculum_draws_only_the_middle_first_then_everything() -> None:
    task = RetrievalTask(task="kv", pairs=8, key_chars=1, style="compact", queries=2)
    setting = _setting(task, steps=10)
    for name, early in (("curriculum", {2, 3, 4, 5}), ("curriculum-reverse", {0, 1, 6, 7})):
        law = get_remedy(name).gold_probs(setting)
        assert law is not None
        sampler = RetrievalBatches(
            task, batch_size=64, seed=0, length=sequence_length(task), gold_probs=law
        )
        before = {
            g for s in range(3) for r in sampler.batch(s).tolist() for g in _compact_golds(r, 2)
        }
        after = {g for s in (3, 9) for r in sampler.batch(s).tolist() for g in _compact_golds(r, 2)}
        assert before == early  # steps 0..2 < 0.3 * 10
        assert after == set(range(8))


def test_adaptive_law_moves_to_the_positions_the_last_validation_got_wrong() -> None:
    task = RetrievalTask(task="kv", pairs=4, key_chars=1, style="compact")
    remedy = get_remedy("oversample:adaptive")
    assert remedy.uses_validation and not get_remedy("oversample").uses_validation
    law = remedy.gold_probs(_setting(task))
    assert law is not None
    np.testing.assert_allclose(law(0), 0.25)
    remedy.on_validation(np.array([1.0, 0.0, 0.5, 1.0]), 10)
    # e = (0, 1, .5, 0): p = .5 * .25 + .5 * e / 1.5
    np.testing.assert_allclose(law(5), [0.125, 0.125 + 1 / 3, 0.125 + 1 / 6, 0.125])


def _rho_two_layers(x: np.ndarray, a: float) -> np.ndarray:
    """Closed form for H = 2: rho_2(x) = 2 a (1 - a) + a^2 ln(1/x)."""
    return 2 * a * (1 - a) + a * a * np.log(1 / x)


def test_loss_weights_average_one_follow_one_over_rho_and_respect_the_cap() -> None:
    task = RetrievalTask(task="kv", pairs=12, key_chars=1, style="compact")
    setting = _setting(task, layers=2, alpha=0.7)
    weights = get_remedy("loss-weight").gold_weights(setting)
    assert weights is not None
    assert weights.mean() == pytest.approx(1.0, abs=1e-12)
    expected = 1 / _rho_two_layers(np.asarray(setting.centres), 0.7)
    np.testing.assert_allclose(weights, expected / expected.mean(), rtol=1e-10)  # cap not hit
    assert np.all(np.diff(weights) > 0)  # rho_H falls with x: late records weigh most
    wide = 1 / _rho_two_layers(np.linspace(0.001, 1, 20), 0.95)
    capped = positions.capped_mean_one(wide, cap=1.5)
    assert capped.mean() == pytest.approx(1.0) and capped.max() == pytest.approx(1.5)
    free = capped < 1.5
    np.testing.assert_allclose(capped[free] / wide[free], (capped[free] / wide[free])[0])
    with pytest.raises(UserError, match="--cap must be >= 1"):
        positions.capped_mean_one(wide, cap=0.5)


def test_loss_weights_reach_each_answer_token_and_the_loss() -> None:
    task = RetrievalTask(task="kv", pairs=6, key_chars=2, style="compact", queries=3)
    w = np.array([0.5, 1.0, 1.5, 2.0, 0.25, 0.75])
    sampler = RetrievalBatches(
        task, batch_size=8, seed=4, length=sequence_length(task), gold_weights=w
    )
    tokens, mask, weight = sampler.weighted_sample(3)
    plain_tokens, plain_mask = RetrievalBatches(task, 8, 4, sequence_length(task)).sample(3)
    assert torch.equal(tokens, plain_tokens) and torch.equal(mask, plain_mask)
    for row in range(8):
        golds = _compact_golds(tokens[row].tolist(), 3, chars=2)
        answer_weights = weight[row][mask[row] > 0].tolist()
        assert answer_weights == pytest.approx([w[g] for g in golds for _ in range(2)])
        assert float(weight[row][mask[row] == 0].abs().sum()) == 0.0
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(8, tokens.shape[1] - 1, 256, generator=gen)
    targets = tokens[:, 1:]
    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    manual = np.mean([float((ce[b] * weight[b]).sum() / mask[b].sum()) for b in range(8)])
    assert float(masked_next_token_loss(logits, targets, mask, weight)) == pytest.approx(manual)
    assert math.isclose(
        float(masked_next_token_loss(logits, targets, mask, mask)),
        float(masked_next_token_loss(logits, targets, mask)),
    )


def test_the_trainer_steps_on_the_weighted_loss() -> None:
    from lostmid.behaviour.training import MaskedTrainer, retrieval_preset

    config = retrieval_preset("retrieval-micro")
    train = config.resolved_train()
    task = config.task
    w = np.array([3.0, 0.5, 0.25, 0.25])
    sampler = RetrievalBatches(task, 4, 0, sequence_length(task), gold_weights=w)
    from lostmid.train.model import build_model

    model = build_model(train.model, seed=0)
    tokens, mask, weight = sampler.weighted_sample(0)
    with torch.no_grad():
        logits = model(input_ids=tokens[:, :-1]).logits
    expected = float(masked_next_token_loss(logits, tokens[:, 1:], mask, weight))
    trainer = MaskedTrainer(model, train, sampler)  # type: ignore[arg-type]
    assert trainer.train_step() == pytest.approx(expected, rel=1e-5)
    assert expected != pytest.approx(float(masked_next_token_loss(logits, tokens[:, 1:], mask)))


def test_one_layer_has_no_positional_learning_signal_so_weights_are_one() -> None:
    """rho_1(x) = a for every x < 1: the theory gives loss-weight nothing to do."""
    task = RetrievalTask(task="kv", pairs=6, key_chars=1, style="compact")
    weights = get_remedy("loss-weight").gold_weights(_setting(task, layers=1))
    np.testing.assert_allclose(weights, 1.0)


def test_a_curriculum_phase_with_fewer_records_than_queries_still_samples() -> None:
    """6 pairs: 2 outer records, 4 queries a row; the first query stays mostly outer."""
    task = RetrievalTask(task="kv", pairs=6, key_chars=1, style="compact", queries=4)
    law = get_remedy("curriculum-reverse").gold_probs(_setting(task, steps=10))
    assert law is not None
    sampler = RetrievalBatches(task, 64, 0, sequence_length(task), gold_probs=law)
    firsts = [_compact_golds(r, 4)[0] for r in sampler.batch(0).tolist()]
    assert np.mean([g in (0, 5) for g in firsts]) > 0.8  # expected 0.95 + 0.05 / 3


def test_a_remedy_law_tilts_the_data_law_or_replaces_it() -> None:
    from lostmid.behaviour import gold_distribution
    from lostmid.remedies.training import combine_laws

    remedy = lambda step: np.array([0.1, 0.2, 0.3, 0.4])  # noqa: E731
    data = gold_distribution("beta:0.3", 4)  # more weight at both ends
    tilted = combine_laws(data, remedy, "tilt")(0)
    by_hand = data * remedy(0) / np.sum(data * remedy(0))
    np.testing.assert_allclose(tilted, by_hand, rtol=1e-12)
    np.testing.assert_array_equal(combine_laws(data, remedy, "replace")(0), remedy(0))
    # on uniform data, tilting is the remedy's own law: runs made before the option agree
    uniform = gold_distribution("uniform", 4)
    np.testing.assert_allclose(combine_laws(uniform, remedy, "tilt")(5), remedy(5), rtol=1e-12)
    assert combine_laws(data, None, "tilt") is None  # no remedy law: the data's own


def test_an_unknown_law_is_one_line() -> None:
    from lostmid.errors import UserError
    from lostmid.remedies import RemediesConfig

    with pytest.raises(UserError, match="--law 'mix' unknown"):
        RemediesConfig(law="mix")
