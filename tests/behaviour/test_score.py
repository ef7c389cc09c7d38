"""Scoring: intervals against independent references, batching against one-by-one and
against an uncached token-by-token reference, and the by-position bookkeeping."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from lostmid.behaviour.decoding.answers import found
from lostmid.behaviour.decoding.generate import greedy_decode, teacher_forced
from lostmid.behaviour.score import score_positions, summarise_positions
from lostmid.errors import UserError
from lostmid.models import load_model
from lostmid.stats import difference_interval, wilson_interval


@pytest.mark.parametrize(("k", "n"), [(0, 5), (1, 1), (3, 10), (37, 50), (50, 50), (1, 200)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    np.testing.assert_allclose(wilson_interval(k, n), (ci.low, ci.high), atol=1e-12)


def test_newcombe_against_the_published_example_and_scipy_wilson() -> None:
    # Newcombe (1998), example (a): 56/70 - 48/80, method 10: 0.0524 to 0.3339
    d, lo, hi = difference_interval(56, 70, 48, 80)
    assert d == pytest.approx(0.2) and round(lo, 4) == 0.0524 and round(hi, 4) == 0.3339
    # the same construction from scipy's Wilson intervals
    for k1, n1, k2, n2 in [(9, 10, 3, 10), (0, 12, 12, 12), (5, 20, 7, 9)]:
        a = stats.binomtest(k1, n1).proportion_ci(method="wilson")
        b = stats.binomtest(k2, n2).proportion_ci(method="wilson")
        p1, p2 = k1 / n1, k2 / n2
        ref_lo = p1 - p2 - math.sqrt((p1 - a.low) ** 2 + (b.high - p2) ** 2)
        ref_hi = p1 - p2 + math.sqrt((a.high - p1) ** 2 + (p2 - b.low) ** 2)
        np.testing.assert_allclose(difference_interval(k1, n1, k2, n2)[1:], (ref_lo, ref_hi))


def test_every_example_counted_once_at_its_position() -> None:
    rng = np.random.default_rng(0)
    positions = rng.choice([0, 5, 9, 14], size=200)
    correct = rng.random(200) < 0.6
    logprob = rng.normal(size=200)
    scores = score_positions(positions, correct, logprob)
    assert sum(s.n for s in scores) == 200
    for s in scores:
        at = positions == s.position
        assert s.n == at.sum() and s.correct == correct[at].sum()
        assert s.mean_logprob == pytest.approx(logprob[at].mean())
        assert s.ci_low <= s.accuracy <= s.ci_high
    summary = summarise_positions(scores, "teacher")
    acc = {s.position: s.accuracy for s in scores}
    assert summary.middle == 5  # nearest to (0 + 14) / 2 = 7: 5 and 9 tie, lower wins
    assert summary.primacy.estimate == pytest.approx(acc[0] - acc[5])
    assert summary.recency.estimate == pytest.approx(acc[14] - acc[5])
    assert summary.gap.estimate == pytest.approx(max(acc.values()) - min(acc.values()))
    assert summary.mean_accuracy == pytest.approx(correct.mean())
    assert summary.mean_logprob == pytest.approx(logprob.mean())
    assert summary.n == 200


def test_logprob_t_interval_per_position() -> None:
    lp = np.array([-1.0, -2.0, -3.0, -5.0, -5.0])
    s = score_positions(np.array([0, 0, 0, 1, 2]), np.ones(5, dtype=bool), lp)
    half = stats.t.ppf(0.975, 2) * 1.0 / math.sqrt(3)  # sd 1 over 3 examples
    assert s[0].mean_logprob == pytest.approx(-2.0)
    assert (s[0].logprob_ci_low, s[0].logprob_ci_high) == pytest.approx((-2 - half, -2 + half))
    # one example: no interval (None in the record, not +-inf)
    assert s[1].logprob_ci_low is None and s[1].record()["logprob_ci_high"] is None


def test_liu_rule() -> None:
    assert found("substring", 'The value is "ab12".', "AB12")
    assert found("substring", "  ab12", "ab12")
    assert not found("substring", "ab1", "ab12")
    assert not found("substring", "", "ab12")


def _random_requests(seed: int) -> tuple[list[list[int]], list[list[int]]]:
    rng = np.random.default_rng(seed)
    prompts = [rng.integers(0, 200, size=int(n)).tolist() for n in rng.integers(2, 18, size=7)]
    targets = [rng.integers(0, 200, size=int(n)).tolist() for n in rng.integers(1, 5, size=7)]
    return prompts, targets


def _token_by_token(model: torch.nn.Module, prompt: list[int], target: list[int]) -> float:
    """log p(target | prompt) by one forward per target token (no gather, no padding)."""
    total = 0.0
    for j, token in enumerate(target):
        ids = torch.tensor([prompt + target[:j]])
        total += float(torch.log_softmax(model(input_ids=ids).logits[0, -1].double(), -1)[token])
    return total


@pytest.mark.parametrize("spec", ["tiny-qwen2", "tiny-gpt2"])
def test_teacher_forced_batches_equal_one_by_one(spec: str) -> None:
    model = load_model(spec, seed=1).model
    prompts, targets = _random_requests(1)
    single = teacher_forced(model, prompts, targets, batch_size=1)
    ref = [_token_by_token(model, p, t) for p, t in zip(prompts, targets, strict=True)]
    np.testing.assert_allclose(single.logprob, ref, rtol=1e-5, atol=1e-5)
    for padding in ("left", "right"):
        batched = teacher_forced(model, prompts, targets, batch_size=4, padding=padding)
        np.testing.assert_allclose(batched.logprob, single.logprob, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(batched.argmax, single.argmax)


def test_teacher_argmax_flag_is_greedy_recall() -> None:
    model = load_model("tiny-qwen2", seed=2).model
    prompts, _ = _random_requests(2)
    greedy = greedy_decode(model, prompts, 3, batch_size=3)
    wrong = [[(g[0] + 1) % 200] + g[1:] for g in greedy]
    scores = teacher_forced(model, prompts + prompts, greedy + wrong, batch_size=5)
    assert scores.argmax[:7].all() and not scores.argmax[7:].any()


@pytest.mark.parametrize("spec", ["tiny-qwen2", "tiny-gpt2"])
def test_greedy_batches_equal_uncached_reference(spec: str) -> None:
    model = load_model(spec, seed=3).model
    prompts, _ = _random_requests(3)
    counts = [1, 2, 3, 4, 5, 4, 3]
    batched = greedy_decode(model, prompts, counts, batch_size=4)
    ref = []
    for prompt, count in zip(prompts, counts, strict=True):
        ids = list(prompt)
        for _ in range(count):
            ids.append(int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
        ref.append(ids[len(prompt) :])
    assert batched == ref


def test_too_long_or_foreign_ids_are_one_line_errors() -> None:
    model = load_model("tiny-qwen2").model
    # prompt 10 + target 2: the model reads 11 tokens (the last target is only predicted)
    assert teacher_forced(model, [[1] * 10], [[2]], max_length=10).logprob.shape == (1,)
    with pytest.raises(UserError, match="needs 11 tokens but the model takes at most 10"):
        teacher_forced(model, [[1] * 10], [[2, 3]], max_length=10)
    with pytest.raises(UserError, match="token id 300 is outside the model's vocabulary"):
        greedy_decode(model, [[300]], 2, vocab_size=256)
