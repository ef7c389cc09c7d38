"""Position-resolved kernels against dense brute force, the uniform theory and Monte Carlo.

References, none of which runs the kernels' backward recursions:
* rollout: row t of the explicit product N_H ... N_1, N_l = diag(1 + g_l) (I + A_l S_l);
* jacobian: at d = 1 with independent random signs for every weight (zero mean, unit
  variance: the only moments the kernel uses), E J_tj^2 is an exact finite average over
  all sign patterns of the explicit dense product;
* jacobian: a Monte Carlo of d-dimensional Gaussian networks, each differentiated in
  forward mode (all L d input directions pushed through the layers).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lostmid.errors import UserError
from lostmid.theory import influence_row, positional_influence_row

MASK_CASES = {
    "causal": ["causal"] * 4,
    "sliding:3": ["sliding:3"] * 4,
    "prefix:4": ["prefix:4"] * 4,
    "bidirectional": ["bidirectional"] * 4,
    "per-layer": ["sliding:3", "causal", "prefix:4", "sliding:2"],
}


def layer_operator(a_mat: np.ndarray, s: np.ndarray, sign: float = 1.0) -> np.ndarray:
    """I + sign * A diag(s), the attention sub-block as a dense matrix."""
    return np.eye(len(s)) + sign * a_mat * s[None, :]


def sign_patterns(count: int) -> np.ndarray:
    """(2^count, count): every assignment of +-1 to ``count`` variables."""
    return np.array(list(itertools.product([-1.0, 1.0], repeat=count)))


def normalised(row: np.ndarray) -> np.ndarray:
    return row / row.sum()


@pytest.mark.parametrize("case", list(MASK_CASES))
def test_both_kernels_match_dense_brute_force(case: str, dense_attention) -> None:
    rng = np.random.default_rng(11)
    n, layers = 9, 4
    specs = MASK_CASES[case]
    mats = [dense_attention(spec, n) for spec in specs]
    gains = rng.uniform(0.0, 2.5, size=(layers, n))
    gains[1, 3] = 0.0  # a zero gain is allowed
    mask = specs[0] if case != "per-layer" else specs
    for target in (1, 5, n):
        product = np.eye(n)
        for a_mat, s in zip(mats, gains, strict=True):
            product = layer_operator(a_mat, s) @ product
        got = positional_influence_row(gains, mask=mask, target=target)
        np.testing.assert_allclose(got, normalised(product[target - 1]), rtol=1e-12, atol=1e-15)

        second_moment = np.zeros(n)
        patterns = sign_patterns(layers)
        for signs in patterns:
            product = np.eye(n)
            for a_mat, s, w in zip(mats, gains, signs, strict=True):
                product = layer_operator(a_mat, s, w) @ product
            second_moment += product[target - 1] ** 2 / len(patterns)
        got = positional_influence_row(gains, kernel="jacobian", mask=mask, target=target)
        expected = normalised(np.sqrt(second_moment))
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_mlp_factor_matches_dense_brute_force(dense_attention) -> None:
    """Block l: diag(1 + g_l v_l) (I + w_l A_l S_l) with v_l(m) = sqrt(c) v_l + sqrt(1-c) v'_lm.

    Every w_l, v_l and v'_lm is an independent random sign; the average over all
    2^(2H + H L) patterns is the exact second moment.
    """
    rng = np.random.default_rng(5)
    n, layers = 5, 2
    mats = [dense_attention("causal", n), dense_attention("sliding:2", n)]
    gains = rng.uniform(0.2, 2.0, size=(layers, n))
    mlp_gain = rng.uniform(0.0, 1.5, size=(layers, n))
    coherence = rng.uniform(0.0, 1.0, size=(layers, n))
    coherence[0, 0], coherence[1, 2] = 0.0, 1.0

    product = np.eye(n)
    for a_mat, s, g in zip(mats, gains, mlp_gain, strict=True):
        product = np.diag(1 + g) @ layer_operator(a_mat, s) @ product
    got = positional_influence_row(
        gains, mask=["causal", "sliding:2"], mlp_gain=mlp_gain, mlp_coherence=coherence
    )
    np.testing.assert_allclose(got, normalised(product[-1]), rtol=1e-12)

    patterns = sign_patterns(2 * layers + layers * n)  # 16384 patterns
    products = np.broadcast_to(np.eye(n), (len(patterns), n, n))
    for layer in range(layers):
        w = patterns[:, layer]
        v = patterns[:, layers + layer]
        v_own = patterns[:, 2 * layers + layer * n : 2 * layers + (layer + 1) * n]
        c = coherence[layer]
        mlp = 1 + mlp_gain[layer] * (np.sqrt(c) * v[:, None] + np.sqrt(1 - c) * v_own)
        attn = np.eye(n) + w[:, None, None] * (mats[layer] * gains[layer][None, :])
        products = mlp[:, :, None] * (attn @ products)
    expected = normalised(np.sqrt(np.mean(products[:, -1] ** 2, axis=0)))
    got = positional_influence_row(
        gains,
        kernel="jacobian",
        mask=["causal", "sliding:2"],
        mlp_gain=mlp_gain,
        mlp_coherence=coherence,
    )
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("kernel", ["rollout", "jacobian"])
@pytest.mark.parametrize("mask", ["causal", "sliding:40", "prefix:30", "bidirectional"])
def test_equal_gains_reduce_to_the_uniform_theory(kernel: str, mask: str) -> None:
    """I + s A = (1 + s)((1 - a) I + a A) with a = s/(1+s): the same normalised row."""
    length, layers, target = 300, 12, 217
    for s in (0.05, 1.0, 7.0):
        got = positional_influence_row(
            np.full((layers, length), s), kernel=kernel, mask=mask, target=target
        )
        expected = influence_row(length, layers, s / (1 + s), mask, kernel, target)
        np.testing.assert_allclose(got, normalised(expected), rtol=1e-12, atol=1e-300)
    per_layer = np.linspace(0.02, 3.0, layers)
    got = positional_influence_row(
        np.repeat(per_layer[:, None], length, axis=1), kernel=kernel, mask=mask, target=target
    )
    expected = influence_row(length, layers, per_layer / (1 + per_layer), mask, kernel, target)
    np.testing.assert_allclose(got, normalised(expected), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("kernel", ["rollout", "jacobian"])
def test_a_coherent_constant_mlp_changes_nothing(kernel: str) -> None:
    """A constant MLP gain with c = 1 scales every path alike; c < 1 must matter."""
    rng = np.random.default_rng(3)
    gains = rng.uniform(0.1, 1.0, size=(6, 80))
    plain = positional_influence_row(gains, kernel=kernel)
    mlp = np.full_like(gains, 0.7)
    coherent = positional_influence_row(gains, kernel=kernel, mlp_gain=mlp, mlp_coherence=1.0)
    np.testing.assert_allclose(coherent, plain, rtol=1e-12)
    incoherent = positional_influence_row(gains, kernel=kernel, mlp_gain=mlp, mlp_coherence=0.0)
    if kernel == "rollout":  # the rollout sums every path coherently (documented)
        np.testing.assert_allclose(incoherent, plain, rtol=1e-12)
    else:
        assert np.max(np.abs(incoherent / plain - 1)) > 0.05


def forward_mode_squared_norms(
    gains: np.ndarray,
    mats: list[np.ndarray],
    target: int,
    d: int,
    samples: int,
    rng: np.random.Generator,
    mlp_gain: np.ndarray | None = None,
    coherence: np.ndarray | None = None,
) -> np.ndarray:
    """(samples, L): ||d x^H_t / d x^0_j||_F^2 / d of independent Gaussian networks.

    Each network is pushed forward on the L d basis inputs at once: X[s, b] is the
    response (L x d) to input direction b = (j, a).
    """
    layers, n = gains.shape
    x = np.broadcast_to(np.eye(n * d).reshape(n * d, n, d), (samples, n * d, n, d))
    for layer in range(layers):
        w = rng.standard_normal((samples, 1, d, d)) / np.sqrt(d)  # E W W^T = I
        x = x + mats[layer] @ (gains[layer][:, None] * x) @ w
        if mlp_gain is not None and coherence is not None:
            c = coherence[layer][None, :, None, None]
            shared = rng.standard_normal((samples, 1, d, d))
            own = rng.standard_normal((samples, n, d, d))
            v = (np.sqrt(c) * shared + np.sqrt(1 - c) * own) / np.sqrt(d)
            x = x + mlp_gain[layer][:, None] * np.einsum("sbmd,smde->sbme", x, v)
    rows = x[:, :, target - 1, :].reshape(samples, n, d * d)
    return (rows**2).sum(axis=-1) / d


@pytest.mark.parametrize("with_mlp", [False, True], ids=["attention", "attention+mlp"])
def test_jacobian_kernel_matches_monte_carlo(with_mlp: bool, dense_attention) -> None:
    rng = np.random.default_rng(2024)
    n, layers, target, d = 7, 3, 6, 4
    specs = ["causal", "sliding:3", "causal"]
    mats = [dense_attention(spec, n) for spec in specs]
    gains = rng.uniform(0.3, 2.0, size=(layers, n))
    mlp_gain = rng.uniform(0.3, 1.5, size=(layers, n)) if with_mlp else None
    coherence = rng.uniform(0.0, 1.0, size=(layers, n)) if with_mlp else None
    draws = forward_mode_squared_norms(gains, mats, target, d, 4000, rng, mlp_gain, coherence)
    mean = draws.mean(axis=0)[:target]
    stderr = draws.std(axis=0, ddof=1)[:target] / np.sqrt(draws.shape[0])
    assert np.all(draws[:, target:] == 0)  # causal masks: later positions cannot reach t

    def worst_z(row: np.ndarray) -> float:
        """Largest |mean - mu row^2| / stderr with mu fitted by weighted least squares
        (the kernels are normalised, so the overall scale is free)."""
        shape = row[:target] ** 2
        weight = 1 / stderr**2
        mu = np.sum(weight * mean * shape) / np.sum(weight * shape**2)
        return float(np.max(np.abs(mean - mu * shape) / stderr))

    kwargs = {"mask": specs, "target": target, "mlp_gain": mlp_gain, "mlp_coherence": coherence}
    assert worst_z(positional_influence_row(gains, kernel="jacobian", **kwargs)) < 4.5
    # The same data reject the rollout kernel, so the test can tell the two apart,
    # and (with the MLP) a jacobian kernel that ignored the incoherent part.
    assert worst_z(positional_influence_row(gains, kernel="rollout", **kwargs)) > 10
    if with_mlp:
        coherent = kwargs | {"mlp_coherence": 1.0}
        assert worst_z(positional_influence_row(gains, kernel="jacobian", **coherent)) > 6


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"gains": np.ones(8)},
            "gains must be an H x L array (layers by positions, L >= 1), got shape (8,)",
        ),
        ({"gains": np.ones((2, 0))}, "gains must be an H x L array"),
        ({"gains": -np.ones((2, 8))}, "gains must be finite and >= 0, got -1.0 at layer 1"),
        ({"gains": np.full((2, 8), np.nan)}, "gains must be finite and >= 0, got nan"),
        ({"target": 9}, "target must be a position in 1..8 (1-indexed), got 9"),
        ({"target": 0}, "target must be a position in 1..8 (1-indexed), got 0"),
        ({"kernel": "ntk"}, "kernel 'ntk' unknown; choose one of rollout, jacobian"),
        ({"mask": ["causal"] * 3}, "mask list has 3 masks but there are 2 layers"),
        ({"mask": "sliding:9"}, "sliding window width 9 exceeds the length 8"),
        ({"mask": ["causal", "diagonal"]}, "unknown mask 'diagonal'"),
        (
            {"mlp_gain": np.ones((2, 7))},
            "mlp_gain must be a 2 x 8 array (the shape of gains), got shape (2, 7)",
        ),
        ({"mlp_gain": np.ones((2, 8)), "mlp_coherence": 1.5}, "mlp_coherence must be in [0, 1]"),
        ({"mlp_gain": np.ones((2, 8)), "mlp_coherence": np.ones(8)}, "scalar or a 2 x 8 array"),
        ({"mlp_coherence": 0.5}, "mlp_coherence needs mlp_gain"),
    ],
)
def test_bad_input_raises_user_error(kwargs: dict, message: str) -> None:
    args = {"gains": np.ones((2, 8))} | kwargs
    gains = args.pop("gains")
    with pytest.raises(UserError) as err:
        positional_influence_row(gains, **args)
    assert message in str(err.value)
