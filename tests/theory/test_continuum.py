"""Continuum closed form, its regions, and its distance to the exact row."""

from __future__ import annotations

import itertools
from math import comb, factorial, log

import numpy as np
import pytest
from scipy.integrate import quad

from lostmid.errors import UserError
from lostmid.theory import influence_row
from lostmid.theory.continuum import (
    continuum_error,
    continuum_row,
    density,
    effective_learning_rate,
    hop_masses,
    regions,
)


def test_density_matches_binomial_formula() -> None:
    h, a = 6, 0.35
    for x in (1e-6, 0.01, 0.3, 0.5, 0.99, 1.0):
        expected = sum(
            comb(h, k) * a**k * (1 - a) ** (h - k) * log(1 / x) ** (k - 1) / factorial(k - 1)
            for k in range(1, h + 1)
        )
        assert density(x, h, a) == pytest.approx(expected, rel=1e-12)


def test_density_integrates_to_one_minus_recency_weight() -> None:
    h, a = 5, 0.4
    mass, _ = quad(lambda x: float(density(x, h, a)), 0, 1, limit=200)
    assert mass == pytest.approx(1 - (1 - a) ** h, rel=1e-8)
    eta_mean, _ = quad(lambda x: float(effective_learning_rate(x, h, a)), 0, 1, limit=200)
    assert eta_mean == pytest.approx(1.0, rel=1e-8)


def test_hop_masses_are_gamma_cell_masses() -> None:
    t = 37
    masses = hop_masses(t, 4)
    np.testing.assert_allclose(masses.sum(axis=1), 1.0, rtol=1e-13)
    # k = 1 is uniform on (0, 1]: every cell has mass 1/t
    np.testing.assert_allclose(masses[0], 1.0 / t, rtol=1e-12)
    # k = 2: density ln(1/x); cell mass by direct integration
    j = 5
    direct, _ = quad(lambda x: log(1 / x), (j - 1) / t, j / t)
    assert masses[1, j - 1] == pytest.approx(direct, rel=1e-10)


def test_continuum_converges_to_exact_row() -> None:
    errors = []
    for length in (100, 1000, 10000):
        exact = influence_row(length, 8, 0.3)
        cont = continuum_row(length, 8, 0.3)
        assert cont.sum() == pytest.approx(1.0, abs=1e-12)
        errors.append(continuum_error(exact, cont, length).l1_rel_error)
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.01


def test_continuum_jacobian_kernel_and_target() -> None:
    exact = influence_row(3000, 6, 0.5, kernel="jacobian", target=2000)
    cont = continuum_row(3000, 6, 0.5, kernel="jacobian", target=2000)
    assert np.all(cont[2000:] == 0)
    assert continuum_error(exact, cont, 2000).l1_rel_error < 0.01


def path_terms(alphas: list[float], u: float) -> list[float]:
    """T_k(u) = b_k u^(k-1)/(k-1)!, k = 1..H, with b_k by expanding the product by hand."""
    h = len(alphas)
    b = [0.0] * (h + 1)
    for chosen in itertools.product([0, 1], repeat=h):
        weight = 1.0
        for a, took_attention in zip(alphas, chosen, strict=True):
            weight *= a if took_attention else 1 - a
        b[sum(chosen)] += weight
    return [b[k] * u ** (k - 1) / factorial(k - 1) for k in range(1, h + 1)]


def test_regions_against_brute_force_path_terms() -> None:
    alphas, t = [0.95, 0.7, 0.85, 0.9], 1000
    exact = influence_row(t, 4, alphas)
    r = regions(exact, 4, alphas, t)
    # positions where the k = H term is the largest of all, counted one by one
    dominated = [j for j in range(1, t + 1) if np.argmax(path_terms(alphas, log(t / j))) == 3]
    assert dominated == list(range(1, r.tail_dominates_positions + 1))
    assert 10 < r.tail_dominates_positions < t - 10  # a case where the boundary is inside
    assert r.dominant_hops_start == 1 + int(np.argmax(path_terms(alphas, log(t))))
    assert r.dominant_hops_middle == 1 + int(np.argmax(path_terms(alphas, log(2))))
    assert r.dominant_hops_end == 1 + int(np.argmax(path_terms(alphas, log(t / (t - 1)))))
    assert r.recency_anchor_weight == pytest.approx(0.05 * 0.3 * 0.15 * 0.1)
    assert exact[r.above_uniform_until - 1] >= 1 / t > exact[r.above_uniform_until]


def test_dead_zone_levels_are_limits_of_the_exact_row() -> None:
    """t times the exact influence at j = t/2 tends to the continuum density at x = 1/2."""
    h, t = 6, 100_000
    pure = regions(influence_row(t, h, 1.0), h, 1.0, t)
    assert pure.dead_zone_pure_attention == pytest.approx(
        t * influence_row(t, h, 1.0)[t // 2 - 1], rel=1e-3
    )
    alphas = [0.3, 0.6, 0.2, 0.9, 0.5, 0.4]
    mixed = regions(influence_row(t, h, alphas), h, alphas, t)
    assert mixed.dead_zone_density == pytest.approx(
        t * influence_row(t, h, alphas)[t // 2 - 1], rel=1e-3
    )


def test_continuum_rejects_bad_input() -> None:
    with pytest.raises(UserError, match="x in"):
        density(0.0, 3, 0.5)
    with pytest.raises(UserError, match="kernel 'ntk' unknown; choose one of rollout, jacobian"):
        continuum_row(10, 3, 0.5, kernel="ntk")
    with pytest.raises(
        UserError, match=r"target must be a position in 1..10 \(1-indexed\), got 11"
    ):
        continuum_row(10, 3, 0.5, target=11)
    with pytest.raises(UserError, match="at least one layer"):
        regions(np.ones(10), 0, 0.5, 10)
