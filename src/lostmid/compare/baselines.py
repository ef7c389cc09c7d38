"""Naive profiles a reader should compare the theory against.

Spearman alone is weak evidence: any decreasing profile with a last-token spike scores
near 1 (PAPER_NOTES.md). Each baseline here is such a naive guess, with its free
parameters fitted to the measured profile by least squares on log values, the same
criterion as :func:`lostmid.compare.fit.fit_theory`, so it gets a fair chance.

Every baseline has a spike at the target t: its value there is the measured value
m_t (the least-squares fit of a free parameter that touches only that position). On
the other positions j != t, with x_j = (j-1)/(L-1), the shapes are

* ``flat+spike``:         f_j = c                       (c, spike: 2 parameters)
* ``linear+spike``:       f_j = c (1 - d x_j), d in [0, 1]     (c, d, spike: 3)
* ``power+spike``:        f_j = c j^(-p)                 (c, p, spike: 3)
* ``exponential+spike``:  f_j = c exp(-r x_j)            (c, r, spike: 3)

fitted to minimise sum_{j != t, m_j > 0} (ln m_j - ln f_j)^2. p and r are free in sign
(a rising profile is allowed); d is bounded so the line stays positive. Positions
after the target where the measurement is exactly 0 (a causal mask) are 0 in every
baseline too, as they are in the theory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from lostmid.checks import check_position
from lostmid.compare.metrics import validate_profile
from lostmid.errors import UserError


@dataclass(frozen=True)
class Baseline:
    """One fitted naive profile.

    Attributes:
        name: short key, e.g. ``power+spike``.
        formula: the shape off the target, as text.
        parameters: fitted values by name (``c``, ``spike`` and the shape parameter).
        parameter_count: number of fitted parameters (the scale and spike included).
        profile: (L,) the fitted profile on the measured scale.
    """

    name: str
    formula: str
    parameters: dict[str, float]
    parameter_count: int
    profile: np.ndarray


BASELINE_NAMES = ("flat+spike", "linear+spike", "power+spike", "exponential+spike")


def fit_baselines(measured: np.ndarray, target: int | None = None) -> dict[str, Baseline]:
    """Fit every baseline to ``measured`` (least squares on log values).

    Args:
        measured: (L,) non-negative measured influence, L >= 3.
        target: 1-indexed target position t (default L), where the spike sits.

    >>> m = 2.0 ** -np.arange(1, 9.0)
    >>> fits = fit_baselines(m)
    >>> r = fits["exponential+spike"].parameters["r"]  # m_j = 2^-j = c e^{-r x_j}
    >>> bool(np.isclose(r, 7 * np.log(2)))  # x runs 0..1 over 7 halvings
    True
    """
    m = validate_profile(measured, "measured profile")
    length = m.size
    if length < 3:
        raise UserError("baselines need a profile of at least 3 positions")
    t = check_position("target", target, length)
    j = np.arange(1, length + 1, dtype=np.float64)
    x = (j - 1) / (length - 1)
    off = (j != t) & (m > 0)
    if off.sum() < 2:
        raise UserError("the measured profile has fewer than 2 positive values off the target")
    log_m = np.log(m[off])
    spike = float(m[t - 1])

    def finish(name: str, formula: str, shape: np.ndarray, params: dict[str, float]) -> Baseline:
        """Scale c by least squares in log (given the shape), then set the spike."""
        log_c = float(np.mean(log_m - np.log(shape[off])))
        profile = np.exp(log_c) * shape
        profile[t - 1] = spike
        profile[t:][m[t:] == 0] = 0.0  # causal zeros after the target are not guessed
        return Baseline(
            name=name,
            formula=formula,
            parameters={"c": float(np.exp(log_c)), **params, "spike": spike},
            parameter_count=len(params) + 2,
            profile=profile,
        )

    fits = [
        finish("flat+spike", "c", np.ones(length), {}),
        _fit_linear(x, off, log_m, finish),
        finish("power+spike", "c * j^(-p)", *_log_linear(np.log(j), off, log_m, "p")),
        finish("exponential+spike", "c * exp(-r x)", *_log_linear(x, off, log_m, "r")),
    ]
    return {fit.name: fit for fit in fits}


def baseline_profiles(measured: np.ndarray, target: int | None = None) -> dict[str, np.ndarray]:
    """The fitted profile of every baseline, by name (see :func:`fit_baselines`).

    >>> sorted(baseline_profiles(np.array([4.0, 2.0, 1.0, 3.0])))
    ['exponential+spike', 'flat+spike', 'linear+spike', 'power+spike']
    """
    return {name: fit.profile for name, fit in fit_baselines(measured, target).items()}


def _log_linear(
    feature: np.ndarray, off: np.ndarray, log_m: np.ndarray, name: str
) -> tuple[np.ndarray, dict[str, float]]:
    """Slope of ln m = ln c - s * feature by ordinary least squares; shape exp(-s feature)."""
    f = feature[off]
    df = f - f.mean()
    slope = -float(np.dot(df, log_m - log_m.mean()) / np.dot(df, df))
    return np.exp(-slope * feature), {name: slope}


def _fit_linear(
    x: np.ndarray,
    off: np.ndarray,
    log_m: np.ndarray,
    finish: Callable[[str, str, np.ndarray, dict[str, float]], Baseline],
) -> Baseline:
    """Bounded scalar search over d in [0, 1]; c is the log-mean given d."""
    # At d = 1 the line reaches 0 at x = 1; keep it strictly positive on the fit positions.
    d_max = min(1.0, (1.0 - 1e-9) / float(x[off].max()))

    def loss(d: float) -> float:
        r = log_m - np.log1p(-d * x[off])
        return float(np.sum((r - r.mean()) ** 2))

    grid = np.linspace(0.0, d_max, 41)
    best = int(np.argmin([loss(d) for d in grid]))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    res = minimize_scalar(loss, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    d = float(res.x) if loss(float(res.x)) <= loss(grid[best]) else float(grid[best])
    return finish("linear+spike", "c * (1 - d x)", 1.0 - d * x, {"d": d})
