"""Continuum limit of the causal theory, its three regions, and its error.

With x = j/t, the Cesàro operator becomes (M f)(y) = (1/y) int_0^y f: one attention hop
sends a position x to a uniform point of (0, x), so ln(1/x) gains an Exp(1) step and
after k hops ln(1/x) ~ Gamma(k, 1). Its density in x is (ln 1/x)^(k-1)/(k-1)!, and

    rho_H(x) = b_0 delta(1 - x) + sum_{k=1..H} b_k (ln 1/x)^(k-1) / (k-1)!,

with b_k the path weights (C(H,k) a^k (1-a)^(H-k) for constant a). Each term integrates
to b_k. The discrete row is compared with the mass each term puts in cell j,
((j-1)/t, j/t], which is a difference of regularised incomplete gamma functions:

    mass_k(j) = P(k, ln(t/(j-1))) - P(k, ln(t/j)),   P(k, u) = gammainc(k, u).

The paper's three regions:
* primacy tail (x -> 0): the k = H term, b_H (ln 1/x)^(H-1)/(H-1)!, log-divergent;
* recency anchor (x = 1): the direct residual path, weight b_0 = prod_l (1 - a_l);
* dead zone (middle): the pure-attention path is O(1/(H-1)!) there.
Caveat (PAPER_NOTES): every term decreases in x, so the smallest value of the
non-delta part sits just before the target, not in the middle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import gammainc, gammaincc, gammaln, logsumexp

from lostmid.checks import check_choice, check_position, check_positive
from lostmid.errors import UserError
from lostmid.theory.exact import KERNELS, AlphaLike, _jacobian_weights, _path_weights
from lostmid.theory.schedules import resolve_alphas
from lostmid.typing import Float


def density(x: float | Float[np.ndarray, "*X"], layers: int, alpha: AlphaLike) -> np.ndarray:
    """The continuous part of rho_H(x) for x in (0, 1] (the recency delta excluded).

    rho_H(x) = sum_{k=1..H} b_k (ln 1/x)^(k-1)/(k-1)!, summed in log space; the result
    has the shape of ``x``.

    >>> float(density(1.0, 3, 0.5))  # only k = 1 survives at x = 1: b_1 = 3/8
    0.375
    """
    return _density(_unit_x(x), resolve_alphas(alpha, layers))


def effective_learning_rate(
    x: float | Float[np.ndarray, "*X"], layers: int, alpha: AlphaLike
) -> np.ndarray:
    """The paper's effective learning rate eta(x) proportional to rho_H(x).

    Normalised to mean 1 over (0, 1): eta(x) = rho_H(x) / (1 - b_0), so eta = 1 would
    mean every position learns at the base rate.

    >>> float(effective_learning_rate(1.0, 1, 0.5))  # one layer: rho = a, b_0 = 1 - a
    1.0
    """
    a = resolve_alphas(alpha, layers)
    b0 = _path_weights(a)[0]
    if b0 >= 1.0:
        raise UserError("with alpha = 0 on every layer nothing but the target is learned")
    return _density(_unit_x(x), a) / (1.0 - b0)


def hop_masses(target: int, hops: int) -> Float[np.ndarray, "K L"]:
    """(hops, target) array: the continuum mass of k = 1..hops in cells j = 1..t.

    mass_k(j) = P(k, ln(t/(j-1))) - P(k, ln(t/j)); the difference is taken on whichever
    of P and Q = 1 - P is small there, so no digits cancel.

    >>> np.round(hop_masses(4, 1), 12).tolist()  # one hop is uniform on (0, 1]
    [[0.25, 0.25, 0.25, 0.25]]
    """
    j = np.arange(1, target + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        u_hi = np.log(target / (j - 1))  # +inf at j = 1
    u_lo = np.log(target / j)
    k = np.arange(1, hops + 1, dtype=np.float64)[:, None]
    p_hi, p_lo = gammainc(k, u_hi), gammainc(k, u_lo)
    q_hi, q_lo = gammaincc(k, u_hi), gammaincc(k, u_lo)
    return np.where(p_hi > 0.5, q_lo - q_hi, p_hi - p_lo).clip(min=0.0)


def continuum_row(
    length: int,
    layers: int,
    alpha: AlphaLike,
    kernel: str = "rollout",
    target: int | None = None,
) -> Float[np.ndarray, " L"]:
    """The continuum prediction of the causal influence row, cell by cell.

    rollout: b_0 [j = t] + sum_k b_k mass_k(j); jacobian: sqrt(e_0 [j = t] + sum_k e_k
    mass_k(j)^2), the same expansion with the jacobian kernel's weights.

    >>> row = continuum_row(1000, 4, 0.3)
    >>> round(float(row.sum()), 12)
    1.0
    """
    check_positive("length", length)
    a = resolve_alphas(alpha, layers)
    kernel = check_choice("kernel", kernel, KERNELS)
    return _continuum_row(length, a, kernel, check_position("target", target, length))


def _continuum_row(
    length: int, a: Float[np.ndarray, " H"], kernel: str, t: int
) -> Float[np.ndarray, " L"]:
    masses = hop_masses(t, a.size)
    out = np.zeros(length)
    if kernel == "rollout":
        b = _path_weights(a)
        out[:t] = b[1:] @ masses
        out[t - 1] += b[0]
        return out
    e = _jacobian_weights(a)
    out[:t] = e[1:] @ masses**2
    out[t - 1] += e[0]
    return np.sqrt(out)


def _unit_x(x: float | np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if np.any((x <= 0) | (x > 1)):
        raise UserError("the continuum density is defined for x in (0, 1]")
    return x


def _density(x: np.ndarray, a: Float[np.ndarray, " H"]) -> np.ndarray:
    if a.size == 0:
        return np.zeros_like(x)
    b = _path_weights(a)
    k = np.arange(1, a.size + 1)
    with np.errstate(divide="ignore"):
        terms = np.log(b[1:]) + _log_power_term(np.log(1.0 / x)[..., None], k)
        return np.exp(logsumexp(terms, axis=-1))


def _log_power_term(u: np.ndarray, k: np.ndarray) -> np.ndarray:
    """log of u^(k-1)/(k-1)!, with 0^0 = 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(k == 1, 0.0, (k - 1) * np.log(u)) - gammaln(k)


@dataclass(frozen=True)
class ContinuumError:
    """How far the continuum is from the exact discrete row.

    max_rel_error: max over j with exact > 0, j != t, of |c_j - e_j| / e_j.
    rel_error_at_target: the same at j = t.
    l1_rel_error: sum_j |c_j - e_j| / sum_j e_j.
    worst_position: 1-indexed position of max_rel_error.
    """

    max_rel_error: float
    worst_position: int
    rel_error_at_target: float
    l1_rel_error: float


def continuum_error(
    exact: Float[np.ndarray, " L"], continuum: Float[np.ndarray, " L"], target: int
) -> ContinuumError:
    """Compare a continuum row with the exact row (both float64, same 1-indexed target).

    >>> continuum_error(np.array([0.5, 0.5]), np.array([0.25, 0.75]), 2).max_rel_error
    0.5
    """
    exact, continuum = np.asarray(exact), np.asarray(continuum)
    idx = np.flatnonzero(exact > 0)
    idx = idx[idx != target - 1]
    rel = np.abs(continuum[idx] - exact[idx]) / exact[idx]
    worst = int(np.argmax(rel)) if rel.size else 0
    return ContinuumError(
        max_rel_error=float(rel[worst]) if rel.size else 0.0,
        worst_position=int(idx[worst]) + 1 if rel.size else target,
        rel_error_at_target=float(
            abs(continuum[target - 1] - exact[target - 1]) / exact[target - 1]
        ),
        l1_rel_error=float(np.abs(continuum - exact).sum() / exact.sum()),
    )


@dataclass(frozen=True)
class Regions:
    """The paper's three regions, quantified (causal rollout, continuum).

    recency_anchor_weight: b_0 = prod (1 - a_l), the direct residual path's weight.
    primacy_tail_term_at_start: b_H (ln t)^(H-1)/(H-1)! at x = 1/t, the asymptotic tail.
    tail_dominates_below: x below which the k = H term is the largest of all path terms,
        x* = exp(-(H-1) b_{H-1}/b_H) (for constant a: exp(-H(H-1)(1-a)/a)); the tail
        dominates only at positions j < x* t, which may be less than 1 (never).
    tail_dominates_positions: floor(x* t), the number of such positions.
    above_uniform_until: last position j (from 1) whose exact influence is >= 1/t.
    dead_zone_pure_attention: (ln 2)^(H-1)/(H-1)!, the pure-attention path at x = 1/2.
    dead_zone_density: rho_H(1/2), the full continuous density at the middle.
    dominant_hops_start/middle/end: the path length k with the largest term at
        x = 1/t, 1/2 and (t-1)/t.
    """

    recency_anchor_weight: float
    primacy_tail_term_at_start: float
    tail_dominates_below: float
    tail_dominates_positions: int
    above_uniform_until: int
    dead_zone_pure_attention: float
    dead_zone_density: float
    dominant_hops_start: int
    dominant_hops_middle: int
    dominant_hops_end: int


def regions(exact: Float[np.ndarray, " L"], layers: int, alpha: AlphaLike, target: int) -> Regions:
    """Quantify the three regions for a causal rollout row ``exact`` (float64) on the
    1-indexed ``target``.

    >>> regions(np.full(4, 0.25), 1, 1.0, 4).recency_anchor_weight  # b_0 = 1 - a
    0.0
    """
    if layers == 0:
        raise UserError("regions need at least one layer")
    a = resolve_alphas(alpha, layers)
    return _regions(np.asarray(exact), a, check_position("target", target, np.size(exact)))


def _regions(exact: Float[np.ndarray, " L"], a: Float[np.ndarray, " H"], target: int) -> Regions:
    b = _path_weights(a)
    h = a.size
    k = np.arange(1, h + 1)

    def dominant(x: float) -> int:
        with np.errstate(divide="ignore"):
            logs = np.log(b[1:]) + _log_power_term(np.asarray(np.log(1.0 / x)), k)
        return int(k[np.argmax(logs)])

    if h >= 2 and b[h] > 0:
        x_star = float(np.exp(-(h - 1) * b[h - 1] / b[h]))
    else:
        x_star = 1.0 if h == 1 else 0.0
    with np.errstate(divide="ignore", over="ignore"):
        tail = b[h] * np.log(target) ** (h - 1) / np.exp(gammaln(h)) if target > 1 else 0.0
    row = np.asarray(exact[:target])
    below = np.flatnonzero(row < 1.0 / target)
    above_until = int(below[0]) if below.size else target
    return Regions(
        recency_anchor_weight=float(b[0]),
        primacy_tail_term_at_start=float(tail),
        tail_dominates_below=x_star,
        tail_dominates_positions=int(np.floor(x_star * target)),
        above_uniform_until=above_until,
        dead_zone_pure_attention=float(np.exp((h - 1) * np.log(np.log(2.0)) - gammaln(h))),
        dead_zone_density=float(_density(np.asarray(0.5), a)),
        dominant_hops_start=dominant(1.0 / target),
        dominant_hops_middle=dominant(0.5),
        dominant_hops_end=dominant((target - 1) / target) if target > 1 else 1,
    )
