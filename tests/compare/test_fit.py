"""Predicted and fitted theory: exact recovery on synthetic measurements."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.compare.fit import fit_theory, predict_theory
from lostmid.errors import UserError
from lostmid.theory import influence_row


@pytest.mark.parametrize("kernel", ["rollout", "jacobian"])
@pytest.mark.parametrize("alpha", [0.15, 0.5, 0.85])
def test_fit_recovers_alpha_and_scale(kernel: str, alpha: float) -> None:
    measured = 3.5 * influence_row(96, 5, alpha, kernel=kernel)
    fit = fit_theory(measured, layers=5, kernel=kernel)
    assert fit.method == "fitted" and fit.kernel == kernel
    assert fit.alpha == pytest.approx(alpha, abs=1e-5)
    assert fit.scale == pytest.approx(3.5, rel=1e-4)
    assert fit.log10_rmse < 1e-6
    assert fit.parameter_count == 2
    np.testing.assert_allclose(fit.alphas, np.full(5, fit.alpha))
    np.testing.assert_allclose(fit.profile, measured, rtol=1e-4)


def test_fit_without_scale_compares_normalised_shapes() -> None:
    measured = 1e-3 * influence_row(64, 4, 0.35, kernel="jacobian")
    fit = fit_theory(measured, layers=4, kernel="jacobian", fit_scale=False)
    assert fit.parameter_count == 1
    assert fit.alpha == pytest.approx(0.35, abs=1e-5)
    assert fit.profile.sum() == pytest.approx(measured.sum(), rel=1e-9)


def test_fit_prefers_the_right_kernel() -> None:
    measured = influence_row(128, 8, 0.3, kernel="jacobian")
    right = fit_theory(measured, 8, "jacobian")
    wrong = fit_theory(measured, 8, "rollout")
    assert right.log10_rmse < 1e-6 < wrong.log10_rmse


def test_predict_uses_per_layer_alphas_unfitted() -> None:
    alphas = [0.1, 0.3, 0.5, 0.2]
    row = influence_row(50, 4, alphas, kernel="jacobian")
    fit = predict_theory(50, alphas, "jacobian", measured=7.0 * row)
    assert fit.method == "predicted" and fit.parameter_count == 0
    np.testing.assert_allclose(fit.alphas, alphas)
    assert fit.alpha == pytest.approx(np.mean(alphas))
    np.testing.assert_allclose(fit.influence, row)
    assert fit.scale == pytest.approx(7.0)
    assert fit.log10_rmse < 1e-12


def test_predict_rollout_sums_to_one_without_measurement() -> None:
    fit = predict_theory(30, [0.4] * 6, "rollout", target=20)
    assert fit.scale == 1.0 and fit.target == 20
    assert fit.profile.sum() == pytest.approx(1.0)
    assert np.all(fit.profile[20:] == 0.0)  # causal: nothing after the target


def test_errors() -> None:
    with pytest.raises(UserError, match="unknown kernel 'softmax'"):
        fit_theory(np.ones(10), 3, "softmax")
    with pytest.raises(UserError, match="unknown kernel 'softmax'"):
        predict_theory(10, [0.5], "softmax")
    with pytest.raises(UserError, match="measured profile has 9 positions but the theory has 10"):
        predict_theory(10, [0.5], "rollout", measured=np.ones(9))
    with pytest.raises(UserError, match="alpha_bounds"):
        fit_theory(np.ones(10), 3, "rollout", alpha_bounds=(0.5, 0.2))
    with pytest.raises(UserError, match=r"alpha must lie in \[0, 1\]"):
        predict_theory(10, [0.5, 1.5], "rollout")
