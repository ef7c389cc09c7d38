"""Baselines: exact recovery of their own shapes, least-squares optimality, the spike."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.compare.baselines import BASELINE_NAMES, baseline_profiles, fit_baselines
from lostmid.errors import UserError

L = 40
J = np.arange(1, L + 1, dtype=float)
X = (J - 1) / (L - 1)


def with_spike(shape: np.ndarray, spike: float, target: int = L) -> np.ndarray:
    out = shape.copy()
    out[target - 1] = spike
    return out


@pytest.mark.parametrize(
    ("name", "shape", "param", "value"),
    [
        ("flat+spike", np.full(L, 0.2), None, None),
        ("linear+spike", 0.2 * (1 - 0.6 * X), "d", 0.6),
        ("power+spike", 0.2 * J**-1.5, "p", 1.5),
        ("exponential+spike", 0.2 * np.exp(-3.0 * X), "r", 3.0),
    ],
)
def test_each_baseline_recovers_its_own_shape(
    name: str, shape: np.ndarray, param: str | None, value: float | None
) -> None:
    measured = with_spike(shape, 5.0)
    fit = fit_baselines(measured)[name]
    np.testing.assert_allclose(fit.profile, measured, rtol=1e-7)
    assert fit.parameters["c"] == pytest.approx(0.2, rel=1e-7)
    assert fit.parameters["spike"] == 5.0
    if param is not None:
        assert fit.parameters[param] == pytest.approx(value, rel=1e-6)


def test_parameter_counts_and_names() -> None:
    fits = fit_baselines(with_spike(J**-1.0, 3.0))
    assert tuple(fits) == BASELINE_NAMES
    assert {n: f.parameter_count for n, f in fits.items()} == {
        "flat+spike": 2,
        "linear+spike": 3,
        "power+spike": 3,
        "exponential+spike": 3,
    }


def test_power_fit_is_the_log_least_squares_line() -> None:
    rng = np.random.default_rng(0)
    measured = J**-0.8 * np.exp(0.3 * rng.standard_normal(L))
    fit = fit_baselines(measured)["power+spike"]
    slope, intercept = np.polyfit(np.log(J[:-1]), np.log(measured[:-1]), 1)
    assert fit.parameters["p"] == pytest.approx(-slope, rel=1e-9)
    assert fit.parameters["c"] == pytest.approx(np.exp(intercept), rel=1e-9)


def test_linear_fit_is_a_local_minimum_of_the_log_loss() -> None:
    rng = np.random.default_rng(1)
    measured = (1 - 0.7 * X) * np.exp(0.1 * rng.standard_normal(L))
    measured[-1] = 2.0
    d = fit_baselines(measured)["linear+spike"].parameters["d"]

    def loss(dd: float) -> float:
        r = np.log(measured[:-1]) - np.log1p(-dd * X[:-1])
        return float(np.sum((r - r.mean()) ** 2))

    assert 0.5 < d < 0.9
    assert loss(d) <= min(loss(d - 1e-4), loss(d + 1e-4))


def test_spike_sits_at_an_inner_target_and_zeros_are_skipped() -> None:
    measured = J**-1.0
    measured[9] = 7.0  # target 10
    measured[4] = 0.0  # a zero is left out of the log fit
    measured[30:] = 0.0  # causal zeros after the target stay zero
    profiles = baseline_profiles(measured, target=10)
    for name, profile in profiles.items():
        assert profile[9] == 7.0, name
        assert np.all(np.isfinite(profile)) and np.all(profile[:30] > 0), name
        assert np.all(profile[30:] == 0.0), name
    # The power law is still recovered exactly despite the zero and the inner target.
    fit = fit_baselines(measured, target=10)["power+spike"]
    assert fit.parameters["p"] == pytest.approx(1.0)


def test_too_few_positive_values() -> None:
    with pytest.raises(UserError, match="fewer than 2 positive values off the target"):
        fit_baselines(np.array([1.0, 0.0, 0.0, 5.0]))


def test_bad_target() -> None:
    with pytest.raises(
        UserError, match=r"target must be a position in 1\.\.40 \(1-indexed\), got 41"
    ):
        fit_baselines(J, target=41)
