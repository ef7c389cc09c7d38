"""Exact rows against brute force, closed forms and invariants."""

from __future__ import annotations

import itertools
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from lostmid.errors import UserError
from lostmid.theory import (
    influence_matrix,
    influence_row,
    jacobian_path_weights,
    log_influence_row,
    path_decomposition,
    path_weights,
    resolve_alphas,
)

# -- brute force from the definitions (dense_attention: tests/theory/conftest.py) -----


def brute_rollout(a_mat: np.ndarray, alphas: np.ndarray, target: int) -> np.ndarray:
    """Row t of N_H ... N_1 by dense products."""
    n = a_mat.shape[0]
    prod = np.eye(n)
    for a in alphas:
        prod = ((1 - a) * np.eye(n) + a * a_mat) @ prod
    return prod[target - 1]


def brute_jacobian(a_mat: np.ndarray, alphas: np.ndarray, target: int) -> np.ndarray:
    """sqrt(sum over layer subsets S of c_S^2 (A^|S|)[t, :]^2), enumerating every S."""
    total = np.zeros(a_mat.shape[0])
    layers = len(alphas)
    for chosen in itertools.product([0, 1], repeat=layers):
        c = np.prod([a if s else 1 - a for a, s in zip(alphas, chosen, strict=True)])
        row = np.linalg.matrix_power(a_mat, sum(chosen))[target - 1]
        total += c**2 * row**2
    return np.sqrt(total)


MASKS = ["causal", "bidirectional", "sliding:1", "sliding:3", "sliding:7", "prefix:1", "prefix:5"]
SCHEDULES = [0.3, 1.0, [0.9, 0.1, 0.5, 0.0, 0.7]]


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("alpha", SCHEDULES, ids=["const", "pure-attn", "per-layer"])
@pytest.mark.parametrize("kernel", ["rollout", "jacobian"])
def test_rows_match_brute_force(mask: str, alpha: object, kernel: str, dense_attention) -> None:
    n, layers = 23, 5
    a_mat = dense_attention(mask, n)
    alphas = resolve_alphas(alpha, layers)
    brute = brute_rollout if kernel == "rollout" else brute_jacobian
    for target in (1, 9, n):
        expected = brute(a_mat, alphas, target)
        got = influence_row(n, layers, alphas, mask=mask, kernel=kernel, target=target)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300)
        got_log = np.exp(log_influence_row(n, layers, alphas, mask, kernel, target))
        np.testing.assert_allclose(got_log, expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("mask", MASKS)
def test_influence_matrix_matches_brute_force(mask: str, dense_attention) -> None:
    n, alphas = 17, resolve_alphas([0.2, 0.8, 0.5], 3)
    a_mat = dense_attention(mask, n)
    for kernel, brute in (("rollout", brute_rollout), ("jacobian", brute_jacobian)):
        mat = influence_matrix(n, 3, alphas, mask=mask, kernel=kernel)
        expected = np.stack([brute(a_mat, alphas, t) for t in range(1, n + 1)])
        np.testing.assert_allclose(mat, expected, rtol=1e-12, atol=1e-15)


def test_long_row_matches_brute_force_at_64(dense_attention) -> None:
    alphas = resolve_alphas(0.37, 12)
    expected = brute_rollout(dense_attention("causal", 64), alphas, 64)
    np.testing.assert_allclose(influence_row(64, 12, alphas), expected, rtol=1e-12)


@pytest.mark.parametrize("mask", MASKS)
def test_rollout_rows_sum_to_one(mask: str) -> None:
    for target in (1, 10, 40):
        row = influence_row(40, 9, 0.45, mask=mask, target=target)
        assert row.sum() == pytest.approx(1.0, abs=1e-13)
        assert np.all(row >= 0)


def test_second_power_is_harmonic_difference() -> None:
    """(M^2)[L, j] = (H_L - H_{j-1}) / L."""
    n = 50
    harmonic = [Fraction(0)]
    for i in range(1, n + 1):
        harmonic.append(harmonic[-1] + Fraction(1, i))
    expected = [float((harmonic[n] - harmonic[j - 1]) / n) for j in range(1, n + 1)]
    np.testing.assert_allclose(influence_row(n, 2, 1.0), expected, rtol=1e-13)


def test_alpha_zero_is_identity() -> None:
    row = influence_row(30, 7, 0.0, target=12)
    assert row[11] == 1.0 and np.count_nonzero(row) == 1


def test_causal_entries_beyond_target_are_exactly_zero() -> None:
    for kernel in ("rollout", "jacobian"):
        row = influence_row(100, 6, 0.6, kernel=kernel, target=37)
        assert np.all(row[37:] == 0.0)
        assert np.all(row[:37] > 0)
        assert np.all(np.isneginf(log_influence_row(100, 6, 0.6, "causal", kernel, 37)[37:]))


def test_path_weights_are_binomial_for_constant_alpha() -> None:
    h, a = 11, 0.23
    expected = [comb(h, k) * a**k * (1 - a) ** (h - k) for k in range(h + 1)]
    np.testing.assert_allclose(path_weights(a, h), expected, rtol=1e-13)
    np.testing.assert_allclose(
        jacobian_path_weights(a, h),
        [comb(h, k) * a ** (2 * k) * (1 - a) ** (2 * (h - k)) for k in range(h + 1)],
        rtol=1e-13,
    )


@pytest.mark.parametrize("kernel", ["rollout", "jacobian"])
def test_path_decomposition_against_dense_powers(kernel: str, dense_attention) -> None:
    alphas = resolve_alphas([0.1, 0.9, 0.4, 0.6, 0.2, 0.5], 6)
    a_mat = dense_attention("sliding:9", 40)
    d = path_decomposition(40, 6, alphas, mask="sliding:9", kernel=kernel, target=33)
    for k in range(7):
        expected = np.linalg.matrix_power(a_mat, k)[32]
        np.testing.assert_allclose(d.rows[k], expected, rtol=1e-12, atol=1e-300)
    brute = brute_rollout if kernel == "rollout" else brute_jacobian
    total = d.contributions.sum(axis=0)
    reassembled = total if kernel == "rollout" else np.sqrt(total)
    np.testing.assert_allclose(reassembled, brute(a_mat, alphas, 33), rtol=1e-12)
    # a window of 9 moves at most 8 back per hop: position 1 needs >= 4 hops to reach 33
    assert np.all(d.rows[:4, 0] == 0) and d.dominant_hops[0] >= 4


def test_log_domain_keeps_values_far_below_float_range() -> None:
    """(M^k)[L, L] = L^-k exactly; for k = 120, L = 1000 that is 1e-360."""
    log_row = log_influence_row(1000, 120, 1.0)
    assert log_row[-1] == pytest.approx(-120 * np.log(1000), rel=1e-13)
    assert influence_row(1000, 120, 1.0)[-1] == 0.0  # float64 underflows, as documented


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"length": 0}, "length must be positive, got 0"),
        ({"length": 2.5}, "length must be a whole number, got 2.5"),
        ({"layers": -1}, "number of layers must be an integer >= 0"),
        ({"alpha": 1.5}, "alpha must lie in [0, 1]"),
        ({"alpha": [0.1, 0.2]}, "schedule has 2 values but there are 4 layers"),
        ({"mask": "sliding:0"}, "sliding window width must be >= 1"),
        ({"mask": "sliding:11"}, "exceeds the length 10"),
        ({"mask": "prefix:11"}, "prefix length 11 exceeds the length 10"),
        ({"mask": "diagonal"}, "unknown mask 'diagonal'"),
        ({"target": 11}, "target must be a position in 1..10 (1-indexed), got 11"),
        ({"kernel": "ntk"}, "kernel 'ntk' unknown; choose one of rollout, jacobian"),
    ],
)
def test_bad_input_raises_user_error(kwargs: dict, message: str) -> None:
    args = {"length": 10, "layers": 4, "alpha": 0.5} | kwargs
    for function in (influence_row, log_influence_row, path_decomposition):
        with pytest.raises(UserError) as err:
            function(**args)
        assert message in str(err.value)
