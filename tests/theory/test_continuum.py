"""Continuum closed form, its regions, and its distance to the exact row."""

from __future__ import annotations

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


def test_regions_quantify_the_three_claims() -> None:
    h, a, t = 24, 0.1, 2048
    exact = influence_row(t, h, a)
    r = regions(exact, h, a, t)
    assert r.recency_anchor_weight == pytest.approx(0.9**24)
    # the k = H asymptotic tail never dominates at this scale: x* = exp(-H(H-1)(1-a)/a)
    assert r.tail_dominates_below == pytest.approx(np.exp(-24 * 23 * 0.9 / 0.1))
    assert r.tail_dominates_positions == 0
    assert r.dead_zone_pure_attention == pytest.approx(log(2) ** 23 / factorial(23))
    assert exact[r.above_uniform_until - 1] >= 1 / t > exact[r.above_uniform_until]
    # with pure attention the deepest path dominates everywhere
    r1 = regions(influence_row(t, 4, 1.0), 4, 1.0, t)
    assert r1.tail_dominates_below == 1.0 or r1.dominant_hops_middle == 4


def test_continuum_rejects_bad_input() -> None:
    with pytest.raises(UserError, match="x in"):
        density(0.0, 3, 0.5)
    with pytest.raises(UserError, match="unknown kernel"):
        continuum_row(10, 3, 0.5, kernel="ntk")
