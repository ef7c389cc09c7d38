"""Naive profiles a reader should compare the theory against.

Spearman alone is weak evidence: any decreasing profile with a last-token spike scores
near 1 (PAPER_NOTES.md). Each baseline here is such a naive guess. It is fitted exactly
as the theory is (:mod:`lostmid.compare.fitting`: the same objective, the same spike
policy), so neither side gets a chance the other does not. On the positions j != t,
with x_j = (j-1)/(L-1), the shapes are

* ``flat+spike``:         g_j = 1                       (no shape parameter)
* ``linear+spike``:       g_j = 1 - d x_j, d in [0, 1)  (d)
* ``power+spike``:        g_j = j^(-p)                  (p)
* ``exponential+spike``:  g_j = exp(-r x_j)             (r)

and the target t carries the spike share s of :mod:`lostmid.compare.fitting`. p and r
are free in sign (a rising profile is allowed; the search starts on [-2, 6] and
[-20, 100] and widens to the log-least-squares value); d is bounded so the line stays
positive. Positions after the target where the measurement is exactly 0 (a causal
mask) are 0 in every baseline too, as they are in the theory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lostmid.checks import check_choice, check_position
from lostmid.compare.config import FIT_METRICS, SPIKE_POLICIES
from lostmid.compare.fitting import Family, FamilyFit, fit_shape
from lostmid.compare.metrics import validate_profile
from lostmid.errors import UserError


@dataclass(frozen=True)
class Baseline:
    """One fitted naive profile.

    Attributes:
        name: short key, e.g. ``power+spike``.
        formula: the shape off the target, as text.
        parameters: fitted values by name (the shape parameter and ``spike_share``).
        parameter_count: numbers taken from the measurement (shape parameter and spike).
        profile: (L,) the fitted profile on the measured scale.
        loss: the fit objective at the optimum.
    """

    name: str
    formula: str
    parameters: dict[str, float]
    parameter_count: int
    profile: np.ndarray
    loss: float


@dataclass(frozen=True)
class BaselineFamily(Family):
    """One naive shape as a fitted family (see the module docstring).

    Attributes:
        label: short key, e.g. ``power+spike``; the candidate is ``baseline:<label>``.
        formula: the shape off the target, as text.
        parameter: name of the shape parameter, None for ``flat+spike``.
    """

    label: str
    formula: str
    parameter: str | None
    kind: str = "baseline"
    kernel: str | None = None

    @property
    def name(self) -> str:
        return f"baseline:{self.label}"

    def fit(self, measured: np.ndarray, target: int, *, fit_metric: str, spike: str) -> FamilyFit:
        length = measured.size
        j = np.arange(1, length + 1, dtype=np.float64)
        x = (j - 1) / (length - 1)
        dead = (j > target) & (measured == 0)  # causal zeros stay zero
        off = (j != target) & (measured > 0)
        feature, bounds, guesses = self._search(j, x, dead, off, measured, target)

        def log_shape(theta: float | None) -> np.ndarray:
            with np.errstate(divide="ignore"):
                out = np.zeros(length) if theta is None else feature(theta)
            out[dead] = -np.inf
            return out

        fit = fit_shape(log_shape, measured, target, fit_metric, spike, bounds, guesses)
        parameters: dict[str, float] = {}
        if self.parameter is not None:
            assert fit.theta is not None  # a family with a parameter is fitted on bounds
            parameters[self.parameter] = fit.theta
        parameters["spike_share"] = fit.spike_share
        return FamilyFit(
            profile=fit.profile,
            parameters=parameters,
            parameter_count=len(parameters),
            loss=fit.loss,
            description=f"baseline {self.label}: {self.formula} ({fit_metric}, spike {spike})",
        )

    def _search(
        self,
        j: np.ndarray,
        x: np.ndarray,
        dead: np.ndarray,
        off: np.ndarray,
        measured: np.ndarray,
        target: int,
    ) -> tuple[Callable[[float], np.ndarray], tuple[float, float] | None, tuple[float, ...]]:
        """(ln g as a function of theta, search bounds, least-squares guesses)."""
        if self.parameter is None:
            return (lambda _: np.zeros(j.size)), None, ()
        log_m = np.log(measured[off])
        if self.parameter == "d":
            used = ~dead & (j != target)
            d_max = min(1.0, (1.0 - 1e-9) / float(x[used].max()))
            return (lambda d: np.log1p(-d * x)), (0.0, d_max), ()
        feature = np.log(j) if self.parameter == "p" else x
        bounds = (-2.0, 6.0) if self.parameter == "p" else (-20.0, 100.0)
        f = feature[off]
        if f.size < 2 or np.ptp(f) == 0:  # no spread to fit a slope to: no guess
            return (lambda s: -s * feature), bounds, ()
        df = f - f.mean()
        slope = -float(np.dot(df, log_m - log_m.mean()) / np.dot(df, df))
        return (lambda s: -s * feature), bounds, (slope,)


BASELINE_FAMILIES = (
    BaselineFamily("flat+spike", "1", None),
    BaselineFamily("linear+spike", "1 - d x", "d"),
    BaselineFamily("power+spike", "j^(-p)", "p"),
    BaselineFamily("exponential+spike", "exp(-r x)", "r"),
)
BASELINE_NAMES = tuple(f.label for f in BASELINE_FAMILIES)


def fit_baselines(
    measured: np.ndarray,
    target: int | None = None,
    *,
    fit_metric: str = "w1",
    spike: str = "free",
) -> dict[str, Baseline]:
    """Fit every baseline to ``measured`` (see :mod:`lostmid.compare.fitting`).

    Args:
        measured: (L,) non-negative measured influence, L >= 3.
        target: 1-indexed target position t (default L), where the spike sits.
        fit_metric: ``w1`` or ``log-lsq``; spike: ``free`` or ``pinned``.

    >>> m = 2.0 ** -np.arange(1, 9.0)
    >>> fits = fit_baselines(m, fit_metric="log-lsq")
    >>> r = fits["exponential+spike"].parameters["r"]  # m_j = 2^-j = c e^{-r x_j}
    >>> bool(np.isclose(r, 7 * np.log(2)))  # x runs 0..1 over 7 halvings
    True
    """
    m = validate_profile(measured, "measured profile")
    if m.size < 3:
        raise UserError("baselines need a profile of at least 3 positions")
    t = check_position("target", target, m.size)
    check_choice("fit_metric", fit_metric, FIT_METRICS)
    check_choice("spike", spike, SPIKE_POLICIES)
    if np.count_nonzero(m[np.arange(m.size) != t - 1]) < 2:
        raise UserError("the measured profile has fewer than 2 positive values off the target")
    out = {}
    for family in BASELINE_FAMILIES:
        fit = family.fit(m, t, fit_metric=fit_metric, spike=spike)
        out[family.label] = Baseline(
            name=family.label,
            formula=family.formula,
            parameters=fit.parameters,
            parameter_count=fit.parameter_count,
            profile=fit.profile,
            loss=fit.loss,
        )
    return out
