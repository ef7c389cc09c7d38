"""Baselines: exact recovery of their own shapes under both objectives, least-squares
optimality, the spike policy, causal zeros."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.compare.baselines import BASELINE_NAMES, fit_baselines
from lostmid.compare.metrics import wasserstein1
from lostmid.errors import UserError

L = 40
J = np.arange(1, L + 1, dtype=float)
X = (J - 1) / (L - 1)


def with_spike(shape: np.ndarray, spike: float, target: int = L) -> np.ndarray:
    out = shape.copy()
    out[target - 1] = spike
    return out


SHAPES = [
    ("flat+spike", np.full(L, 0.2), None, None),
    ("linear+spike", 0.2 * (1 - 0.6 * X), "d", 0.6),
    ("power+spike", 0.2 * J**-1.5, "p", 1.5),
    ("exponential+spike", 0.2 * np.exp(-3.0 * X), "r", 3.0),
]


@pytest.mark.parametrize("fit_metric", ["w1", "log-lsq"])
@pytest.mark.parametrize(("name", "shape", "param", "value"), SHAPES)
def test_each_baseline_recovers_its_own_shape(
    fit_metric: str, name: str, shape: np.ndarray, param: str | None, value: float | None
) -> None:
    measured = with_spike(shape, 5.0)
    fit = fit_baselines(measured, fit_metric=fit_metric)[name]
    np.testing.assert_allclose(fit.profile, measured, rtol=1e-6)
    assert fit.parameters["spike_share"] == pytest.approx(5.0 / measured.sum(), rel=1e-9)
    assert wasserstein1(fit.profile, measured) < 1e-7
    if param is not None:
        assert fit.parameters[param] == pytest.approx(value, rel=1e-5)


def test_parameter_counts_and_names() -> None:
    fits = fit_baselines(with_spike(J**-1.0, 3.0))
    assert tuple(fits) == BASELINE_NAMES
    # The spike share is one number taken from the data; the scale is not counted.
    assert {n: f.parameter_count for n, f in fits.items()} == {
        "flat+spike": 1,
        "linear+spike": 2,
        "power+spike": 2,
        "exponential+spike": 2,
    }


def test_power_fit_by_log_lsq_is_the_least_squares_line() -> None:
    rng = np.random.default_rng(0)
    measured = J**-0.8 * np.exp(0.3 * rng.standard_normal(L))
    fit = fit_baselines(measured, fit_metric="log-lsq")["power+spike"]
    slope, intercept = np.polyfit(np.log(J[:-1]), np.log(measured[:-1]), 1)
    assert fit.parameters["p"] == pytest.approx(-slope, rel=1e-9)
    # Off the target the profile is the fitted line; a free spike is the measured value.
    np.testing.assert_allclose(fit.profile[:-1], np.exp(intercept) * J[:-1] ** slope, rtol=1e-9)
    assert fit.profile[-1] == measured[-1]


def test_w1_fit_is_the_w1_minimum() -> None:
    """No nearby (p, spike share) does better than the fitted power law on W1."""
    rng = np.random.default_rng(3)
    measured = with_spike(J**-0.7 * np.exp(0.2 * rng.standard_normal(L)), 1.5)
    fit = fit_baselines(measured)["power+spike"]
    p, s = fit.parameters["p"], fit.parameters["spike_share"]

    def w1(pp: float, ss: float) -> float:
        g = J[:-1] ** -pp
        return wasserstein1(np.r_[(1 - ss) * g / g.sum(), ss], measured)

    assert fit.loss == pytest.approx(w1(p, s), abs=1e-12)
    for dp in (-1e-3, 0.0, 1e-3):
        for ds in (-1e-3, 0.0, 1e-3):
            assert fit.loss <= w1(p + dp, s + ds) + 1e-12
    # The log-least-squares power law is a different, worse fit by this measure.
    lsq = fit_baselines(measured, fit_metric="log-lsq")["power+spike"]
    assert wasserstein1(lsq.profile, measured) > fit.loss


def test_pinned_spike_is_the_measured_share_for_every_baseline() -> None:
    rng = np.random.default_rng(1)
    measured = with_spike((1 - 0.7 * X) * np.exp(0.1 * rng.standard_normal(L)), 2.0)
    share = measured[-1] / measured.sum()
    for fit_metric in ("w1", "log-lsq"):
        for name, fit in fit_baselines(measured, fit_metric=fit_metric, spike="pinned").items():
            assert fit.profile[-1] / fit.profile.sum() == pytest.approx(share, rel=1e-12), name


def test_spike_sits_at_an_inner_target_and_zeros_are_skipped() -> None:
    measured = J**-1.0
    measured[9] = 7.0  # target 10
    measured[4] = 0.0  # a zero is left out of the log fit
    measured[30:] = 0.0  # causal zeros after the target stay zero
    fits = fit_baselines(measured, target=10, fit_metric="log-lsq")
    for name, fit in fits.items():
        assert fit.profile[9] == 7.0, name
        assert np.all(np.isfinite(fit.profile)) and np.all(fit.profile[:30] > 0), name
        assert np.all(fit.profile[30:] == 0.0), name
    # The power law is still recovered exactly despite the zero and the inner target.
    assert fits["power+spike"].parameters["p"] == pytest.approx(1.0)


def test_too_few_positive_values() -> None:
    with pytest.raises(UserError, match="fewer than 2 positive values off the target"):
        fit_baselines(np.array([1.0, 0.0, 0.0, 5.0]))


def test_bad_target_and_policy() -> None:
    with pytest.raises(UserError, match=r"target must be a position in 1\.\.40 \(1-indexed\)"):
        fit_baselines(J, target=41)
    with pytest.raises(UserError, match="spike 'fixed' unknown; choose one of free, pinned"):
        fit_baselines(J, spike="fixed")
