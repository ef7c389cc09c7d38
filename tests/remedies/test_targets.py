"""The gold-law targets: the theory-derived ones weight the last record most (as their
descriptions say), the middle cover reaches uniform coverage of the middle under tilt on
the real preset's law and on any law, and the deficit target trains on the deficit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lostmid.behaviour import gold_distribution
from lostmid.errors import UserError
from lostmid.remedies import RemediesConfig, get_remedy, positions
from lostmid.remedies.training import combine_laws, train_config, training_setting


def _successive_marginal(p: np.ndarray, queries: int) -> np.ndarray:
    """Brute force: the share of all answer draws that each record gets when a row asks
    ``queries`` records drawn one after another without replacement from ``p``."""
    share = np.zeros(p.size)
    for order in itertools.permutations(range(p.size), queries):
        prob, left = 1.0, 1.0
        for g in order:
            prob *= p[g] / left
            left -= p[g]
        share[list(order)] += prob
    return share / queries


def _trained_law(spec: str, quick: bool, law: str = "tilt") -> tuple[np.ndarray, object]:
    """The law the real retrieval-valley preset trains a remedy on (at step 0)."""
    rconfig = train_config(RemediesConfig(quick=quick), 0)
    setting = training_setting(rconfig, 0.5, law)
    data = gold_distribution(rconfig.task.gold, rconfig.task.pairs)
    combined = combine_laws(data, get_remedy(spec).gold_probs(setting), law)
    assert combined is not None
    return combined(0), rconfig


@pytest.mark.parametrize("quick", [True, False])
def test_middle_cover_gives_every_middle_record_uniform_coverage_on_the_preset(
    quick: bool,
) -> None:
    law, rconfig = _trained_law("oversample:middle-cover", quick)
    pairs, queries = rconfig.task.pairs, rconfig.task.queries
    assert rconfig.task.gold == "beta:0.3" and pairs == (6 if quick else 8)
    middle = positions.middle_records(pairs) > 0
    assert law.sum() == pytest.approx(1.0)
    assert np.all(law[middle] >= 1 / pairs - 1e-12)  # the law of the first query
    # every query of a row (4, without replacement): the share of all answer draws
    assert np.all(_successive_marginal(law, queries)[middle] >= 1 / pairs - 1e-12)
    # the middle bump does not reach it: the data's ends are asked 4-5x as often
    bump, _ = _trained_law("oversample", quick)
    assert np.all(bump[middle] < 1 / pairs)
    data = gold_distribution("beta:0.3", pairs)
    assert data[0] / data[middle].min() > 3.0  # more than the bump's most, 1 + boost


def test_middle_cover_on_eight_records_keeps_the_near_ends_and_lowers_the_ends() -> None:
    """The least change: records 1 and 6 (outside the middle, below 1/8) keep the data's
    share; the ends give back exactly what the middle needs."""
    law, _ = _trained_law("oversample:middle-cover", quick=False)
    data = gold_distribution("beta:0.3", 8)
    np.testing.assert_allclose(law[[1, 6]], data[[1, 6]], rtol=1e-12)
    np.testing.assert_allclose(law[2:6], 1 / 8, rtol=1e-12)
    need = np.sum(1 / 8 - data[2:6])
    np.testing.assert_allclose(law[[0, 7]], data[[0, 7]] - need / 2, rtol=1e-12)


def test_middle_cover_holds_for_any_law_and_is_uniform_on_uniform_data() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        pairs = int(rng.integers(1, 13))
        data = rng.dirichlet(np.full(pairs, float(rng.choice([0.2, 1.0, 5.0]))))
        data = np.maximum(data, 1e-9)
        data /= data.sum()
        tilt = positions.middle_cover(data)
        p = data * tilt / np.sum(data * tilt)
        u, middle = 1 / pairs, positions.middle_records(pairs) > 0
        assert tilt.sum() == pytest.approx(1.0)
        assert np.all(p[middle] >= u * (1 - 1e-9))
        # the least change: records outside the middle at or below u keep their share,
        # and every record that gives mass back stays at or above u
        keep = ~middle & (data <= u)
        np.testing.assert_allclose(p[keep], data[keep], rtol=1e-9)
        gave = p < data - 1e-12
        assert np.all(p[gave] >= u * (1 - 1e-9))
        np.testing.assert_allclose(positions.middle_cover(np.full(pairs, u)), u, rtol=1e-12)
    # under --law replace the met law is uniform: the cover is the uniform law
    law, _ = _trained_law("oversample:middle-cover", quick=False, law="replace")
    np.testing.assert_allclose(law, 1 / 8, rtol=1e-12)


def test_a_middle_record_the_data_never_draws_cannot_be_covered_by_a_tilt() -> None:
    data = np.array([0.5, 0.0, 0.25, 0.25])
    with pytest.raises(UserError, match="never draws record 1, so no tilt .* --law replace"):
        positions.middle_cover(data)
    with pytest.raises(UserError, match="summing to 1"):
        positions.middle_cover(np.array([0.5, 0.6]))


def test_the_deficit_target_trains_on_the_validation_deficit_under_both_laws() -> None:
    accuracy = np.array([0.8, 0.5, 0.4, 0.4, 0.5, 0.8])
    expected = positions.adaptive(accuracy, 0.95)  # (1 - acc) with 5% of uniform
    assert np.argmax(expected) in (2, 3) and np.argmin(expected) in (0, 5)
    for law in ("tilt", "replace"):
        rconfig = train_config(RemediesConfig(quick=True), 0)
        remedy = get_remedy("oversample:deficit")
        assert remedy.uses_validation
        setting = training_setting(rconfig, 0.5, law)
        data = gold_distribution(rconfig.task.gold, rconfig.task.pairs)
        trained = combine_laws(data, remedy.gold_probs(setting), law)
        assert trained is not None
        # before the first validation every record counts as wrong: uniform
        np.testing.assert_allclose(trained(0), 1 / 6, rtol=1e-12)
        remedy.on_validation(accuracy, 100)
        np.testing.assert_allclose(trained(101), expected, rtol=1e-12)
    # adaptive, by contrast, tilts the data's law: its ends stay the most drawn
    adaptive = get_remedy("oversample:adaptive")
    trained = combine_laws(data, adaptive.gold_probs(training_setting(rconfig, 0.5)), "tilt")
    assert trained is not None
    adaptive.on_validation(accuracy, 100)
    assert np.argmax(trained(101)) in (0, 5)


@pytest.mark.parametrize("spec", ["oversample:rho", "loss-weight"])
def test_the_theory_derived_targets_weight_the_last_record_most(spec: str) -> None:
    remedy = get_remedy(spec)
    assert "last record weighs most" in remedy.describe()
    rconfig = train_config(RemediesConfig(quick=False), 0)
    setting = training_setting(rconfig, 0.5, "replace")
    laws = remedy.gold_probs(setting)
    weights = laws(0) if laws is not None else remedy.gold_weights(setting)
    assert weights is not None
    assert np.all(np.diff(weights) > 0)  # 1/rho_H grows with x: the last record most
    # under tilt the data's ends are asked most: the last record still gets the most
    if laws is not None:
        tilted, _ = _trained_law(spec, quick=False)
        assert np.argmax(tilted) == 7


def test_each_oversample_argument_has_its_own_description() -> None:
    from lostmid.remedies.base import Remedy, register

    descriptions = {
        get_remedy(f"oversample:{a}").describe() for a in get_remedy("oversample").arguments
    }
    assert len(descriptions) == 5
    assert get_remedy("curriculum").describe() == get_remedy("curriculum").description

    class Wrong(Remedy):
        name = "wrong-descriptions"
        description = "x"
        arguments = ("a",)
        argument_descriptions = {"b": "y"}

    with pytest.raises(ValueError, match="describes arguments it does not take"):
        register(Wrong)
