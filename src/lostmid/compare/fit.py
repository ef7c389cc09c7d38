"""Theory parameters for a measured profile, two ways: predicted and fitted.

* Predicted (no fitting): the residual strengths a_l measured on the model, one per
  layer, go straight into the theory row (:func:`predict_theory`).
* Fitted: one constant a in [0, 1] chosen to minimise the squared log error against
  the measurement, with an optional global scale (:func:`fit_theory`).

A rollout row sums to 1 and a jacobian row is an RMS Jacobian norm; neither is in the
units of a measured gradient norm. Shapes are therefore compared after removing a
global scale: with T_j the theory and m_j the measurement, the placed profile is
s * T_j with

    ln s = mean_j (ln m_j - ln T_j)   over positions with m_j > 0,

the least-squares scale in log space. No metric of :mod:`lostmid.compare.metrics`
depends on s; it only puts the curve on the measured axis of a plot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

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
        scale: the global scale s (see the module docstring).
        influence: (L,) the theory row as computed (rollout: sums to 1).
        profile: (L,) ``scale * influence``, on the measured scale.
        log10_rmse: RMS of log10(profile_j / m_j) over positions with both > 0: the
            objective at the optimum, in decades.
        parameter_count: free parameters fitted to the measurement (0 when predicted;
            1 or 2 when fitted: a, and the scale when ``fit_scale``).
        target: the 1-indexed target position t.
    """

    method: str
    kernel: str
    layers: int
    alphas: np.ndarray
    alpha: float
    scale: float
    influence: np.ndarray
    profile: np.ndarray
    log10_rmse: float
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
    _check_kernel(kernel)
    alphas = resolve_alphas(residual_strength_per_layer, int(np.size(residual_strength_per_layer)))
    t = length if target is None else int(target)
    log_row = log_influence_row(length, alphas.size, alphas, mask=mask, kernel=kernel, target=t)
    influence = influence_row(length, alphas.size, alphas, mask=mask, kernel=kernel, target=t)
    if measured is None:
        scale, rmse = 1.0, float("nan")
    else:
        log_m = _log_measured(measured, length)
        log_s, rmse = _profiled_scale(log_m, log_row)
        scale = float(np.exp(log_s))
    return TheoryFit(
        method="predicted",
        kernel=kernel,
        layers=int(alphas.size),
        alphas=alphas,
        alpha=float(alphas.mean()) if alphas.size else float("nan"),
        scale=scale,
        influence=influence,
        profile=scale * influence,
        log10_rmse=rmse,
        parameter_count=0,
        target=t,
    )


def fit_theory(
    measured: np.ndarray,
    layers: int,
    kernel: str,
    target: int | None = None,
    mask: str | Mask = "causal",
    fit_scale: bool = True,
    alpha_bounds: tuple[float, float] = (1e-3, 1.0),
) -> TheoryFit:
    """Constant residual strength a (and a global scale) fitted on log influence.

    What is fitted. With T_j(a) the theory row for constant a over H layers and m_j the
    measurement, over the positions P = {j : m_j > 0}:

    * ``fit_scale=True`` (default): minimise over a and c
      sum_{j in P} (ln m_j - ln T_j(a) - c)^2. c is solved in closed form for each a
      (the mean residual), so the search is over a alone; 2 fitted parameters.
    * ``fit_scale=False``: both profiles normalised to sum 1 and compared directly,
      minimise sum_{j in P} (ln q_j - ln p_j(a))^2 with p = T/sum T, q = m/sum m;
      1 fitted parameter.

    The search over a is a 61-point grid on ``alpha_bounds`` followed by a bounded
    Brent refinement around the best grid point (robust to a second local minimum).

    >>> true = influence_row(64, 6, 0.3, kernel="jacobian")
    >>> fit = fit_theory(7.0 * true, layers=6, kernel="jacobian")
    >>> round(fit.alpha, 4), round(fit.scale, 4)
    (0.3, 7.0)
    """
    _check_kernel(kernel)
    m = validate_profile(measured, "measured profile")
    length = m.size
    t = length if target is None else int(target)
    lo, hi = alpha_bounds
    if not 0.0 <= lo < hi <= 1.0:
        raise UserError(f"alpha_bounds must satisfy 0 <= lo < hi <= 1, got {alpha_bounds}")
    log_m = _log_measured(m, length)

    def rows(a: float) -> np.ndarray:
        return log_influence_row(length, layers, a, mask=mask, kernel=kernel, target=t)

    def loss(a: float) -> float:
        log_row = rows(a)
        if fit_scale:
            return _profiled_scale(log_m, log_row)[1]
        return _normalised_rmse(log_m, log_row)

    grid = np.linspace(lo, hi, 61)
    losses = np.array([loss(a) for a in grid])
    best = int(np.nanargmin(np.where(np.isfinite(losses), losses, np.nan)))
    left, right = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    res = minimize_scalar(loss, bounds=(left, right), method="bounded", options={"xatol": 1e-8})
    alpha = float(res.x) if loss(float(res.x)) <= losses[best] else float(grid[best])

    log_row = rows(alpha)
    if fit_scale:
        log_s, rmse = _profiled_scale(log_m, log_row)
    else:
        log_s = float(np.log(np.sum(m)) - np.logaddexp.reduce(log_row))
        rmse = _normalised_rmse(log_m, log_row)
    influence = influence_row(length, layers, alpha, mask=mask, kernel=kernel, target=t)
    scale = float(np.exp(log_s))
    return TheoryFit(
        method="fitted",
        kernel=kernel,
        layers=layers,
        alphas=resolve_alphas(alpha, layers),
        alpha=alpha,
        scale=scale,
        influence=influence,
        profile=scale * influence,
        log10_rmse=rmse,
        parameter_count=2 if fit_scale else 1,
        target=t,
    )


# -- internals ---------------------------------------------------------------------------

_LN10 = float(np.log(10.0))


def _check_kernel(kernel: str) -> None:
    if kernel not in KERNELS:
        raise UserError(f"unknown kernel '{kernel}'; use one of: {', '.join(KERNELS)}")


def _log_measured(measured: np.ndarray, length: int) -> np.ndarray:
    """ln m_j, nan where m_j = 0 (left out of every fit)."""
    m = validate_profile(measured, "measured profile")
    if m.size != length:
        raise UserError(
            f"measured profile has {m.size} positions but the theory has {length}; "
            "use the same length L"
        )
    out = np.full(m.size, np.nan)
    out[m > 0] = np.log(m[m > 0])
    return out


def _profiled_scale(log_m: np.ndarray, log_row: np.ndarray) -> tuple[float, float]:
    """ln s = mean residual; returns (ln s, RMS residual in log10 units)."""
    used = np.isfinite(log_m)
    resid = log_m[used] - log_row[used]
    if not np.all(np.isfinite(resid)):
        return 0.0, float("inf")  # the theory is exactly 0 where the measurement is not
    log_s = float(resid.mean())
    return log_s, float(np.sqrt(np.mean((resid - log_s) ** 2)) / _LN10)


def _normalised_rmse(log_m: np.ndarray, log_row: np.ndarray) -> float:
    """RMS of log10(q_j / p_j) with both normalised to sum 1 (log10 units)."""
    used = np.isfinite(log_m)
    log_q = log_m - np.logaddexp.reduce(log_m[used])
    log_p = log_row - np.logaddexp.reduce(log_row[np.isfinite(log_row)])
    resid = log_q[used] - log_p[used]
    if not np.all(np.isfinite(resid)):
        return float("inf")
    return float(np.sqrt(np.mean(resid**2)) / _LN10)
