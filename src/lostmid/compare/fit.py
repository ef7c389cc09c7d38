"""Theory parameters for a measured profile, two ways: predicted and fitted.

* Predicted (no fitting): the residual strengths a_l measured on the model, one per
  layer, go straight into the theory row (:func:`predict_theory`).
* Fitted: one constant a in [0, 1] and the spike share, chosen by the objective and the
  spike policy every candidate shares (:mod:`lostmid.compare.fitting`;
  :func:`fit_theory`, :class:`TheoryFamily`).

A rollout row sums to 1 and a jacobian row is an RMS Jacobian norm; neither is in the
units of a measured gradient norm, and no metric of :mod:`lostmid.compare.metrics`
depends on the scale. A predicted row is put on the measured axis (for plots) by the
log-least-squares scale s: ln s = mean_j (ln m_j - ln T_j) over positions with both
> 0; a fitted row by its objective (:func:`lostmid.compare.fitting.place`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lostmid.checks import check_choice, check_position
from lostmid.compare.config import FIT_METRICS, SPIKE_POLICIES
from lostmid.compare.fitting import Family, FamilyFit, fit_shape
from lostmid.compare.metrics import validate_profile
from lostmid.errors import UserError
from lostmid.theory import KERNELS, Mask, influence_row, log_influence_row, resolve_alphas


@dataclass(frozen=True)
class TheoryFit:
    """A theory profile with the parameters it came from.

    Attributes:
        method: ``predicted`` (measured a_l, nothing fitted) or ``fitted``.
        kernel: ``rollout`` or ``jacobian``.
        layers: depth H.
        alphas: (H,) the residual strength of each layer used.
        alpha: the constant a when fitted; the mean of ``alphas`` when predicted.
        influence: (L,) the theory row as computed (rollout: sums to 1), with its own
            spike.
        profile: (L,) the candidate on the measured axis; when fitted, its spike share
            follows the spike policy instead of the row's own.
        spike_share: the share of ``profile`` at the target.
        loss: the fit objective at the optimum (nan when predicted).
        parameter_count: numbers taken from the measurement (0 when predicted; a and the
            spike when fitted).
        target: the 1-indexed target position t.
    """

    method: str
    kernel: str
    layers: int
    alphas: np.ndarray
    alpha: float
    influence: np.ndarray
    profile: np.ndarray
    spike_share: float
    loss: float
    parameter_count: int
    target: int


def predict_theory(
    length: int,
    residual_strength_per_layer: Sequence[float] | np.ndarray,
    kernel: str,
    target: int | None = None,
    mask: str | Mask = "causal",
    measured: np.ndarray | None = None,
) -> TheoryFit:
    """The theory row with a_l = the measured residual strength of layer l, unfitted.

    Args:
        length: sequence length L.
        residual_strength_per_layer: H values lambda_l in [0, 1], first layer first.
        kernel: ``rollout`` or ``jacobian``.
        target: 1-indexed target position (default L).
        mask: attention mask of the model (default causal).
        measured: if given, the profile is placed on its scale (the log-least-squares
            scale s); otherwise s = 1.

    >>> fit = predict_theory(4, [1.0], "rollout")  # one pure-attention layer: 1/L each
    >>> fit.profile.tolist(), fit.parameter_count
    ([0.25, 0.25, 0.25, 0.25], 0)
    """
    check_choice("kernel", kernel, KERNELS)
    alphas = resolve_alphas(residual_strength_per_layer, int(np.size(residual_strength_per_layer)))
    t = check_position("target", target, length)
    log_row = log_influence_row(length, alphas.size, alphas, mask=mask, kernel=kernel, target=t)
    influence = influence_row(length, alphas.size, alphas, mask=mask, kernel=kernel, target=t)
    if measured is None:
        scale = 1.0
    else:
        m = validate_profile(measured, "measured profile")
        if m.size != length:
            raise UserError(
                f"measured profile has {m.size} positions but the theory has {length}; "
                "use the same length L"
            )
        scale = float(np.exp(_log_scale(log_row, m)))
    profile = scale * influence
    return TheoryFit(
        method="predicted",
        kernel=kernel,
        layers=int(alphas.size),
        alphas=alphas,
        alpha=float(alphas.mean()) if alphas.size else float("nan"),
        influence=influence,
        profile=profile,
        spike_share=float(profile[t - 1] / profile.sum()),
        loss=float("nan"),
        parameter_count=0,
        target=t,
    )


def fit_theory(
    measured: np.ndarray,
    layers: int,
    kernel: str,
    target: int | None = None,
    mask: str | Mask = "causal",
    *,
    fit_metric: str = "w1",
    spike: str = "free",
    alpha_bounds: tuple[float, float] = (1e-3, 1.0),
) -> TheoryFit:
    """Constant residual strength a (and the spike share) fitted to a measurement.

    The shape off the target is the theory row T_j(a) for constant a over H layers; a
    is searched on ``alpha_bounds`` and the spike follows ``spike``, both by the
    objective ``fit_metric`` (:mod:`lostmid.compare.fitting`: ``w1`` by default, the
    metric it is judged by; ``log-lsq`` the least squares on log values).

    >>> true = influence_row(64, 6, 0.3, kernel="jacobian")
    >>> fit = fit_theory(7.0 * true, layers=6, kernel="jacobian")
    >>> round(fit.alpha, 4), fit.loss < 1e-9
    (0.3, True)
    """
    check_choice("kernel", kernel, KERNELS)
    check_choice("fit_metric", fit_metric, FIT_METRICS)
    check_choice("spike", spike, SPIKE_POLICIES)
    m = validate_profile(measured, "measured profile")
    t = check_position("target", target, m.size)
    lo, hi = alpha_bounds
    if not 0.0 <= lo < hi <= 1.0:
        raise UserError(f"alpha_bounds must satisfy 0 <= lo < hi <= 1, got {alpha_bounds}")
    family = TheoryFamily(kernel, layers, mask, alpha_bounds)
    return family.theory_fit(m, t, fit_metric=fit_metric, spike=spike)


@dataclass(frozen=True)
class TheoryFamily(Family):
    """The theory with one constant a over H layers, as a fitted family
    (candidate ``fitted:<kernel>``)."""

    kernel: str
    layers: int
    mask: str | Mask = "causal"
    alpha_bounds: tuple[float, float] = (1e-3, 1.0)
    kind: str = "fitted"

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"fitted:{self.kernel}"

    def theory_fit(
        self, measured: np.ndarray, target: int, *, fit_metric: str, spike: str
    ) -> TheoryFit:
        """The fit as a :class:`TheoryFit` (inputs checked by the caller)."""
        length = measured.size

        def log_shape(a: float | None) -> np.ndarray:
            return log_influence_row(
                length, self.layers, a, mask=self.mask, kernel=self.kernel, target=target
            )

        fit = fit_shape(log_shape, measured, target, fit_metric, spike, self.alpha_bounds)
        alpha = float(fit.theta)
        return TheoryFit(
            method="fitted",
            kernel=self.kernel,
            layers=self.layers,
            alphas=resolve_alphas(alpha, self.layers),
            alpha=alpha,
            influence=influence_row(
                length, self.layers, alpha, mask=self.mask, kernel=self.kernel, target=target
            ),
            profile=fit.profile,
            spike_share=fit.spike_share,
            loss=fit.loss,
            parameter_count=2,
            target=target,
        )

    def fit(self, measured: np.ndarray, target: int, *, fit_metric: str, spike: str) -> FamilyFit:
        fit = self.theory_fit(measured, target, fit_metric=fit_metric, spike=spike)
        return FamilyFit(
            profile=fit.profile,
            parameters={"alpha": fit.alpha, "spike_share": fit.spike_share},
            parameter_count=fit.parameter_count,
            loss=fit.loss,
            description=f"theory, constant a = {fit.alpha:.3f} fitted ({fit_metric}, "
            f"spike {spike}), {self.kernel} kernel",
        )


# -- internals ---------------------------------------------------------------------------


def _log_scale(log_row: np.ndarray, measured: np.ndarray) -> float:
    """ln s = mean of ln m_j - ln T_j over positions where both are > 0 (0 if none)."""
    both = np.isfinite(log_row) & (measured > 0)
    if not both.any():
        return 0.0
    return float(np.mean(np.log(measured[both]) - log_row[both]))
