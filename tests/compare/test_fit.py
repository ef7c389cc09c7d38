"""Predicted and fitted theory: exact recovery on synthetic measurements, the spike
policy applied to the theory as to the baselines."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.compare.baselines import fit_baselines
from lostmid.compare.fit import fit_theory, predict_theory
from lostmid.compare.metrics import wasserstein1
from lostmid.errors import UserError
from lostmid.theory import influence_row


@pytest.mark.parametrize("fit_metric", ["w1", "log-lsq"])
@pytest.mark.parametrize("kernel", ["rollout", "jacobian"])
@pytest.mark.parametrize("alpha", [0.15, 0.5, 0.85])
def test_fit_recovers_alpha(fit_metric: str, kernel: str, alpha: float) -> None:
    measured = 3.5 * influence_row(96, 5, alpha, kernel=kernel)
    fit = fit_theory(measured, layers=5, kernel=kernel, fit_metric=fit_metric)
    assert fit.method == "fitted" and fit.kernel == kernel
    assert fit.alpha == pytest.approx(alpha, abs=1e-5)
    assert fit.parameter_count == 2  # a and the spike share
    np.testing.assert_allclose(fit.alphas, np.full(5, fit.alpha))
    np.testing.assert_allclose(fit.profile, measured, rtol=1e-4)
    # A free spike recovers the theory's own share, which it was not told.
    assert fit.spike_share == pytest.approx(measured[-1] / measured.sum(), rel=1e-4)


def test_fit_prefers_the_right_kernel() -> None:
    measured = influence_row(128, 8, 0.3, kernel="jacobian")
    right = fit_theory(measured, 8, "jacobian")
    wrong = fit_theory(measured, 8, "rollout")
    assert right.loss < 1e-9 < wrong.loss


def test_free_spike_treats_theory_and_baselines_alike() -> None:
    """A measurement whose shape off the target is the theory's but whose spike is 10x
    higher: with a free spike the theory fits it exactly, as a baseline fits its own
    shape with any spike; with the theory's own spike (the old, lopsided rule) it could
    not."""
    row = influence_row(80, 4, 0.4, kernel="jacobian")
    measured = row.copy()
    measured[-1] *= 10.0
    fit = fit_theory(measured, 4, "jacobian")
    assert fit.alpha == pytest.approx(0.4, abs=1e-5)
    assert wasserstein1(fit.profile, measured) < 1e-7
    assert wasserstein1(fit.influence, measured) > 0.1  # its own spike is far off
    pinned = fit_theory(measured, 4, "jacobian", spike="pinned")
    assert pinned.spike_share == pytest.approx(measured[-1] / measured.sum(), rel=1e-12)
    share = measured[-1] / measured.sum()
    for base in fit_baselines(measured, spike="pinned").values():
        assert base.profile[-1] / base.profile.sum() == pytest.approx(share, rel=1e-12)


def test_predict_uses_per_layer_alphas_unfitted() -> None:
    alphas = [0.1, 0.3, 0.5, 0.2]
    row = influence_row(50, 4, alphas, kernel="jacobian")
    fit = predict_theory(50, alphas, "jacobian", measured=7.0 * row)
    assert fit.method == "predicted" and fit.parameter_count == 0
    np.testing.assert_allclose(fit.alphas, alphas)
    assert fit.alpha == pytest.approx(np.mean(alphas))
    np.testing.assert_allclose(fit.influence, row)
    np.testing.assert_allclose(fit.profile, 7.0 * row, rtol=1e-12)
    assert fit.spike_share == pytest.approx(row[-1] / row.sum())


def test_predict_rollout_sums_to_one_without_measurement() -> None:
    fit = predict_theory(30, [0.4] * 6, "rollout", target=20)
    assert fit.target == 20
    assert fit.profile.sum() == pytest.approx(1.0)
    assert np.all(fit.profile[20:] == 0.0)  # causal: nothing after the target


def test_errors() -> None:
    with pytest.raises(UserError, match="kernel 'softmax' unknown"):
        fit_theory(np.ones(10), 3, "softmax")
    with pytest.raises(UserError, match="kernel 'softmax' unknown"):
        predict_theory(10, [0.5], "softmax")
    with pytest.raises(UserError, match="measured profile has 9 positions but the theory has 10"):
        predict_theory(10, [0.5], "rollout", measured=np.ones(9))
    with pytest.raises(UserError, match="alpha_bounds"):
        fit_theory(np.ones(10), 3, "rollout", alpha_bounds=(0.5, 0.2))
    with pytest.raises(UserError, match="fit_metric 'l2' unknown; choose one of w1, log-lsq"):
        fit_theory(np.ones(10), 3, "rollout", fit_metric="l2")
    with pytest.raises(UserError, match=r"alpha must lie in \[0, 1\]"):
        predict_theory(10, [0.5, 1.5], "rollout")
