"""Fair scoring on synthetic seeds where the truth is known: the true family wins out
of sample, an overfitting one wins in sample and loses out of sample; the noise floor;
no leakage of the held-out seed into any fit."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.compare.baselines import BASELINE_FAMILIES
from lostmid.compare.candidates import clipping_notes
from lostmid.compare.claims import format_interval
from lostmid.compare.fit import TheoryFamily
from lostmid.compare.fitting import Family, FamilyFit
from lostmid.compare.metrics import AGREEMENT_METRICS, METRIC_RANGES, compare_profiles
from lostmid.compare.scoring import (
    noise_floor,
    pool_profiles,
    score_out_of_sample,
)
from lostmid.errors import UserError
from lostmid.stats.intervals import MeanSpread
from lostmid.theory import influence_row

L, H, ALPHA = 128, 2, 0.7
TRUTH = influence_row(L, H, ALPHA, kernel="jacobian")


class Copy(Family):
    """The overfitter: the fitting data itself (L numbers taken from it)."""

    name, kind, kernel = "copy", "baseline", None

    def fit(self, measured: np.ndarray, target: int, *, fit_metric: str, spike: str) -> FamilyFit:
        return FamilyFit(measured.copy(), {}, measured.size, 0.0, "the fitting data")


def seeds(draw: int, count: int = 3, sigma: float = 0.3, spike_noise: bool = False) -> np.ndarray:
    """``count`` measurements of TRUTH with independent mean-one log-normal noise per
    position (the spike exact unless ``spike_noise``, so W1 differences come from the
    shape)."""
    rng = np.random.default_rng(draw)
    noise = np.exp(sigma * rng.standard_normal((count, L)) - sigma**2 / 2)
    if not spike_noise:
        noise[:, -1] = 1.0
    return TRUTH * noise


FAMILIES = [TheoryFamily("jacobian", H), TheoryFamily("rollout", H), *BASELINE_FAMILIES, Copy()]


def test_true_family_wins_out_of_sample_and_the_overfitter_only_in_sample() -> None:
    totals = dict.fromkeys((f.name for f in FAMILIES), 0.0)
    for draw in range(8):
        rows = seeds(draw)
        pooled = pool_profiles(rows)
        in_sample = {
            f.name: compare_profiles(
                f.fit(pooled, L, fit_metric="w1", spike="free").profile, pooled
            ).wasserstein1
            for f in FAMILIES
        }
        assert in_sample["copy"] == 0.0 and min(in_sample.values()) == 0.0
        scores = score_out_of_sample(rows, FAMILIES)
        assert all(s.metrics["wasserstein1"].n == 3 for s in scores.values())
        # Per position the overfitter carries the noise of its fitting seeds: on the
        # log error it loses in every draw.
        log_error = {n: s.metrics["log10_rmse"].mean for n, s in scores.items()}
        assert log_error["fitted:jacobian"] < log_error["copy"]
        assert min(log_error, key=log_error.get) == "fitted:jacobian"
        for name, s in scores.items():
            totals[name] += s.metrics["wasserstein1"].mean
    # W1 averages the per-position noise away, so the margins are small per draw; over
    # draws the true family has the least held-out W1 and the overfitter loses to it.
    assert min(totals, key=totals.get) == "fitted:jacobian"
    assert totals["copy"] > totals["fitted:jacobian"]
    assert totals["baseline:power+spike"] > 1.2 * totals["fitted:jacobian"]


def test_predictions_are_scored_per_seed_and_the_truth_beats_a_wrong_prediction() -> None:
    rows = seeds(0, count=4)
    wrong = influence_row(L, H, 0.3, kernel="jacobian")
    per_seed = np.stack([TRUTH, TRUTH, wrong, wrong])  # one profile per seed
    scores = score_out_of_sample(
        rows, predicted={"truth": TRUTH, "wrong": wrong, "mixed": per_seed}
    )
    assert list(scores) == ["truth", "wrong", "mixed"]
    truth, mixed = scores["truth"].folds, scores["mixed"].folds
    assert mixed[0] == truth[0] and mixed[1] == truth[1]  # seeds 0, 1 got TRUTH
    assert mixed[2] == scores["wrong"].folds[2]
    assert all(
        t.wasserstein1 < w.wasserstein1 for t, w in zip(truth, scores["wrong"].folds, strict=True)
    )
    assert scores["truth"].parameters == ({},) * 4


def test_pinned_spike_comes_from_the_other_seeds_not_the_held_out_one() -> None:
    rows = seeds(1, count=3, spike_noise=True)
    scores = score_out_of_sample(rows, FAMILIES[:3], spike="pinned")
    for k in range(3):
        others = np.delete(rows, k, axis=0)
        shares = others[:, -1] / others.sum(axis=1)
        expected = shares.mean()  # the pool's share: the mean of the normalised seeds
        for name in ("fitted:jacobian", "fitted:rollout", "baseline:flat+spike"):
            assert scores[name].parameters[k]["spike_share"] == pytest.approx(expected)
        assert rows[k, -1] / rows[k].sum() != pytest.approx(expected)


def test_noise_floor_of_identical_copies_is_perfect_agreement() -> None:
    floor = noise_floor([TRUTH, 3.0 * TRUTH, 0.5 * TRUTH])  # a scale is not noise
    assert floor.seeds == 3 and len(floor.pairs) == 3
    assert floor.wasserstein1.mean == pytest.approx(0.0, abs=1e-15)
    assert floor.spearman.mean == 1.0 and floor.spearman.spread == 0.0
    assert floor.metrics["binned_wasserstein1"].mean == pytest.approx(0.0, abs=1e-15)


def test_noise_floor_grows_with_the_injected_noise() -> None:
    floors = [noise_floor(seeds(5, count=4, sigma=s, spike_noise=True)) for s in (0.02, 0.1, 0.4)]
    w1 = [f.wasserstein1.mean for f in floors]
    rho = [f.spearman.mean for f in floors]
    assert 0 < w1[0] < w1[1] < w1[2]
    assert 1 > rho[0] > rho[1] > rho[2]
    # The binned Spearman ranks the flat middle by log position, not by noise: it
    # stays higher than the raw one at every noise level.
    assert all(f.metrics["binned_spearman"].mean > f.spearman.mean for f in floors)


def test_pool_is_the_mean_shape_on_the_mean_scale() -> None:
    rows = np.array([[1.0, 3.0], [10.0, 10.0]])
    # shapes (1/4, 3/4) and (1/2, 1/2): mean (3/8, 5/8), times the mean total 12.
    np.testing.assert_allclose(pool_profiles(rows), [4.5, 7.5])


def test_one_seed_has_no_floor_and_no_folds() -> None:
    with pytest.raises(UserError, match="need at least 2 independent measurements"):
        noise_floor([TRUTH])
    with pytest.raises(UserError, match="need at least 2 independent measurements"):
        score_out_of_sample([TRUTH], FAMILIES)
    with pytest.raises(UserError, match=r"must be \(128,\) or \(2, 128\)"):
        score_out_of_sample([TRUTH, TRUTH], predicted={"bad": TRUTH[:10]})


# -- intervals clipped to a metric's range --------------------------------------------


def test_a_spearman_interval_is_clipped_at_one_and_says_so() -> None:
    # two seeds: the t interval 0.94 -+ 12.7 * 0.0707 / sqrt(2) = [0.305, 1.575]
    value = MeanSpread.of([0.99, 0.89], METRIC_RANGES["spearman"])
    low, high = value.t_interval()
    assert high > 1.5 and low == pytest.approx(0.94 - (high - 0.94))
    assert value.interval() == (low, 1.0)
    assert value.clipped
    record = value.record()
    assert record["ci_low"] == low and record["ci_high"] == 1.0 and record["clipped"] is True
    assert format_interval(value) == f"0.94 [{low:.3g}, 1] (n=2)"


def test_a_w1_interval_is_clipped_at_zero_and_an_inner_one_is_left_alone() -> None:
    w1 = MeanSpread.of([0.0082, 0.0001, 0.0161], METRIC_RANGES["wasserstein1"])
    assert w1.t_interval()[0] < 0 and w1.interval() == (0.0, w1.t_interval()[1])
    inside = MeanSpread.of([0.5, 0.52, 0.51], METRIC_RANGES["spearman"])
    assert inside.interval() == inside.t_interval() and not inside.clipped
    assert inside.record()["clipped"] is False
    difference = MeanSpread.of([-0.01, 0.02])  # a difference of W1 has no bound
    assert difference.interval()[0] < -0.1 and not difference.clipped
    assert not MeanSpread.of([], METRIC_RANGES["spearman"]).clipped  # nothing defined
    one = MeanSpread.of([0.999], METRIC_RANGES["spearman"])  # unbounded, clipped to the range
    assert one.interval() == METRIC_RANGES["spearman"] and not one.clipped


def test_every_agreement_metric_has_a_range_the_floor_respects() -> None:
    assert set(METRIC_RANGES) == set(AGREEMENT_METRICS)
    rng = np.random.default_rng(0)
    base = influence_row(16, 2, 0.7, kernel="jacobian")
    rows = [base * rng.uniform(0.97, 1.03, base.size) for _ in range(2)]
    floor = noise_floor(rows + [rows[0] * 1.0001])  # three seeds: 3 pairs, one near-exact
    for metric, value in floor.metrics.items():
        lo, hi = METRIC_RANGES[metric]
        low, high = value.interval()
        assert lo <= low <= high <= hi, metric
    assert floor.wasserstein1.clipped  # W1 0.0 for the near-exact pair: t reaches below 0
    notes = clipping_notes(floor, [])
    assert len(notes) == 1 and "noise floor wasserstein1" in notes[0]
    assert '"clipped": true' in notes[0]
    assert clipping_notes(None, []) == []
