"""Fitting a candidate family to a measured profile: one objective, one spike policy.

Every fitted candidate (the theory with a constant a, each naive baseline) is a family
of shapes g(theta) over the positions j != t, with at most one shape parameter theta,
plus the share of the total influence at the target t (the recency spike). This module
fits all of them the same way, so that no candidate gets a treatment the others do not.

The fitted profile, normalised to sum 1, is

    p_j = (1 - s) g_j / sum_{i != t} g_i   (j != t),      p_t = s,

with s the spike share. Metrics never depend on the overall scale; the profile is put
on the measured axis only for plots (:func:`place`).

Spike policy (``spike``), the same for every candidate:

* ``"free"``: s is a free parameter, fitted with theta by the same objective. The
  theory's own recency weight is not used: it competes on the shape off the target, as
  the baselines do. A zero-parameter prediction keeps its own spike (nothing fitted).
* ``"pinned"``: s is the measured share q_t = m_t / sum m for every candidate,
  predictions included (:func:`pin_spike`). The comparison then tests only the shape
  off the target.

Either way the spike costs one number taken from the data, counted in
``parameter_count``; the scale is not counted (no metric sees it).

Objective (``fit_metric``):

* ``"w1"`` (default): the Wasserstein-1 distance of :func:`lostmid.compare.wasserstein1`,
  the metric candidates are judged by. For a given theta the best s is exact: with G, Q
  the CDFs of g/sum g and of q, and u_j = G_j - [j >= t], W1 = sum_j |G_j - Q_j - s u_j|
  / (L - 1) is minimised by the weighted median of (G_j - Q_j)/u_j with weights |u_j|,
  clipped to [0, 1] (:func:`best_spike_share`). theta is found by a grid and a bounded
  Brent search.
* ``"log-lsq"``: least squares on log values over P = {j != t : m_j > 0},
  min over theta and c of sum_{j in P} (ln m_j - ln g_j(theta) - c)^2 (c in closed
  form). A free spike is then the measured value m_t on the fitted scale e^c (the
  least-squares value of a parameter that touches only position t).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.optimize import minimize_scalar

from lostmid.compare.metrics import _wasserstein1
from lostmid.typing import Float

_LN10 = float(np.log(10.0))
_GRID = 61


@dataclass(frozen=True)
class ShapeFit:
    """The best member of a one-parameter shape family, with its spike share.

    Attributes:
        theta: the fitted shape parameter, None for a family without one.
        spike_share: s, the share of the normalised profile at the target.
        profile: (L,) the fitted profile on the measured axis (:func:`place`).
        loss: the objective at the optimum: W1, or the RMS log10 residual (decades).
    """

    theta: float | None
    spike_share: float
    profile: np.ndarray
    loss: float


def best_spike_share(
    shape: Float[np.ndarray, " L"], measured: Float[np.ndarray, " L"], target: int
) -> float:
    """The spike share s in [0, 1] that minimises W1((1-s) g/sum g + s e_t, m).

    Exact: W1 is convex and piecewise linear in s; its minimum is the weighted median
    of (G_j - Q_j) / u_j with weights |u_j|, u_j = G_j - [j >= t] (see the module
    docstring), clipped to [0, 1].

    Args:
        shape: (L,) g >= 0; its value at the target is ignored.
        measured: (L,) m >= 0.
        target: 1-indexed t.

    >>> m = np.array([1.0, 1.0, 2.0])  # a flat shape fits exactly with half the mass at t
    >>> best_spike_share(np.ones(3), m, 3)
    0.5
    """
    g = _off_target(shape, target)
    big_g = np.cumsum(g / g.sum())[:-1]
    big_q = np.cumsum(measured / measured.sum())[:-1]
    u = big_g - (np.arange(1, g.size) >= target)
    used = np.abs(u) > 1e-15
    if not used.any():
        return float(measured[target - 1] / measured.sum())
    z, w = (big_g - big_q)[used] / u[used], np.abs(u[used])
    order = np.argsort(z, kind="mergesort")
    cum = np.cumsum(w[order])
    median = z[order][int(np.searchsorted(cum, 0.5 * cum[-1]))]
    return float(np.clip(median, 0.0, 1.0))


def pin_spike(
    profile: Float[np.ndarray, " L"], share: float, target: int
) -> Float[np.ndarray, " L"]:
    """``profile`` normalised to sum 1 with its share at the target set to ``share``:
    p_t = share, p_j = (1 - share) g_j / sum_{i != t} g_i elsewhere.

    >>> pin_spike(np.array([1.0, 1.0, 8.0]), 0.5, 3).tolist()
    [0.25, 0.25, 0.5]
    """
    g = _off_target(profile, target)
    out = (1.0 - share) * g / g.sum()
    out[target - 1] = share
    return out


def place(
    normalised: Float[np.ndarray, " L"], measured: Float[np.ndarray, " L"]
) -> Float[np.ndarray, " L"]:
    """A profile that sums to 1 put on the measured axis: the same total influence."""
    return normalised * float(np.sum(measured))


def fit_shape(
    log_shape: Callable[[float | None], np.ndarray],
    measured: np.ndarray,
    target: int,
    fit_metric: str,
    spike: str,
    bounds: tuple[float, float] | None = None,
    guesses: Sequence[float] = (),
) -> ShapeFit:
    """Fit theta (within ``bounds``) and the spike share s of a family to ``measured``.

    Args:
        log_shape: theta -> (L,) ln g(theta) (-inf where g is 0); called with None when
            ``bounds`` is None (a family without a shape parameter).
        measured: (L,) m >= 0, checked by the caller.
        target: 1-indexed t.
        fit_metric: ``w1`` or ``log-lsq``; spike: ``free`` or ``pinned``.
        bounds: the search interval of theta, or None.
        guesses: extra starting values (e.g. a closed-form least-squares theta); the
            interval is widened to contain them.

    The search: a grid of 61 points on ``bounds`` plus ``guesses``, then a bounded Brent
    refinement between the neighbours of the best grid point; the better of the two wins.

    >>> j = np.arange(1, 65.0)
    >>> m = j**-1.5
    >>> m[-1] = 3.0
    >>> fit = fit_shape(lambda p: -p * np.log(j), m, 64, "w1", "free", bounds=(0.0, 3.0))
    >>> round(fit.theta, 4), round(fit.loss, 12)
    (1.5, 0.0)
    """
    q_t = float(measured[target - 1] / measured.sum())
    log_m = np.full(measured.size, np.nan)
    log_m[measured > 0] = np.log(measured[measured > 0])
    off = np.isfinite(log_m) & (np.arange(1, measured.size + 1) != target)

    def evaluate(theta: float | None) -> tuple[float, float, np.ndarray]:
        """(loss, spike share, placed profile) at theta."""
        log_g = np.asarray(log_shape(theta), dtype=np.float64)
        if fit_metric == "log-lsq":
            resid = log_m[off] - log_g[off]
            if not np.all(np.isfinite(resid)):
                return float("inf"), q_t, np.full(measured.size, np.nan)
            c = float(resid.mean())
            loss = float(np.sqrt(np.mean((resid - c) ** 2)) / _LN10)
            g = _off_target(np.exp(log_g + c), target)
            if spike == "free":  # the spike's own least-squares value: m_t
                g[target - 1] = measured[target - 1]
                return loss, float(g[target - 1] / g.sum()), g
            g[target - 1] = q_t / (1.0 - q_t) * g.sum() if q_t < 1.0 else 1.0
            return loss, q_t, g
        g = _exp_shape(log_g, target)
        if not np.any(_off_target(g, target) > 0):
            return float("inf"), q_t, np.full(measured.size, np.nan)
        s = best_spike_share(g, measured, target) if spike == "free" else q_t
        p = pin_spike(g, s, target)
        return _wasserstein1(p, measured), s, place(p, measured)

    if bounds is None:
        loss, s, profile = evaluate(None)
        return ShapeFit(theta=None, spike_share=s, profile=profile, loss=loss)

    lo = min(bounds[0], *guesses) if guesses else bounds[0]
    hi = max(bounds[1], *guesses) if guesses else bounds[1]
    grid = np.unique(np.r_[np.linspace(lo, hi, _GRID), np.asarray(guesses, dtype=float)])
    losses = np.array([evaluate(float(theta))[0] for theta in grid])
    best = int(np.argmin(np.where(np.isfinite(losses), losses, np.inf)))
    theta = float(grid[best])
    left, right = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    if right > left:
        res = minimize_scalar(
            lambda x: evaluate(float(x))[0],
            bounds=(left, right),
            method="bounded",
            options={"xatol": 1e-10 * max(1.0, abs(theta))},
        )
        if float(res.fun) < losses[best]:
            theta = float(res.x)
    loss, s, profile = evaluate(theta)
    return ShapeFit(theta=theta, spike_share=s, profile=profile, loss=loss)


def _off_target(shape: np.ndarray, target: int) -> np.ndarray:
    g = np.array(shape, dtype=np.float64)
    g[target - 1] = 0.0
    return g


def _exp_shape(log_g: np.ndarray, target: int) -> np.ndarray:
    """exp(ln g - max ln g) off the target (0 at the target): the shape without overflow
    or total underflow."""
    finite = np.isfinite(log_g)
    finite[target - 1] = False
    out = np.zeros(log_g.size)
    if finite.any():
        out[finite] = np.exp(log_g[finite] - log_g[finite].max())
    return out


@dataclass(frozen=True)
class FamilyFit:
    """One family fitted to one measurement.

    Attributes:
        profile: (L,) the fitted profile on the measured axis.
        parameters: the fitted values by name (``spike_share`` included).
        parameter_count: numbers taken from the measurement (shape parameters and the
            spike; not the scale, which no metric sees).
        loss: the objective at the optimum (see :data:`FIT_METRICS`).
        description: one line for tables and legends.
    """

    profile: np.ndarray
    parameters: dict[str, float]
    parameter_count: int
    loss: float
    description: str


class Family(ABC):
    """A candidate that is fitted to a measurement (the theory with a constant a, a
    naive baseline, or your own). :func:`lostmid.compare.scoring.score_out_of_sample`
    fits it on some seeds and scores it on another; subclass it to add a candidate.

    Attributes:
        name: the candidate's key, e.g. ``fitted:jacobian`` or ``baseline:power+spike``.
        kind: ``fitted`` (a theory fit) or ``baseline``.
        kernel: the theory kernel, None for a baseline.
    """

    if TYPE_CHECKING:  # read-only: a subclass has it as an attribute or a property

        @property
        def name(self) -> str: ...

    kind: str
    kernel: str | None

    @abstractmethod
    def fit(self, measured: np.ndarray, target: int, *, fit_metric: str, spike: str) -> FamilyFit:
        """Fit to ``measured`` ((L,), checked) with the target at 1-indexed ``target``."""
