"""Exact discrete influence rows by O(L H) recursions.

Model. Layer l maps the residual stream by N_l = (1 - a_l) I + a_l A, with A the
uniform attention of a mask (:mod:`lostmid.theory.masks`). The influence of input
position j on output position t after H layers is read off row t of N_H ... N_1.

Because every N_l is a polynomial in the same A, they commute and

    N_H ... N_1 = sum_k b_k A^k,   b_k = [z^k] prod_l ((1 - a_l) + a_l z),

where k counts attention hops (path length). For constant a, b_k = C(H,k) a^k (1-a)^(H-k).

Kernels.
* ``rollout`` (the paper, the peer project): influence_j = sum_k b_k (A^k)[t, j].
  For the rollout rows sum to 1.
* ``jacobian``: a random linear network X_l = (1-a_l) X_{l-1} + a_l A X_{l-1} W_l with
  independent W_l, E[W W^T] = I. The Jacobian J_tj = dx^H_t/dx^0_j is a sum over the
  set S of layers that take the attention branch,
  J_tj = sum_S prod_{l in S} a_l prod_{l not in S} (1-a_l) (A^|S|)[t, j] prod_{l in S} W_l.
  Cross terms between different S vanish in expectation (some W_l appears once), and
  E||prod_{l in S} W_l||_F^2 = d, hence

      E ||J_tj||_F^2 / d = sum_k e_k ((A^k)[t, j])^2,
      e_k = [z^k] prod_l ((1 - a_l)^2 + a_l^2 z).

  The kernel returns the root of that, sqrt(E||J_tj||_F^2 / d), which is what a
  measured Frobenius norm should be compared with (up to one global scale).

Cost: the rollout row uses Horner's rule, acc <- acc A + b_k e_t, so each layer is one
O(L) left multiplication by A (for the causal mask: one multiply and one suffix sum).
The jacobian row carries r_k = e_t A^k forward. Both take O(L H) time, O(L) memory.
The ``log_*`` functions run the same recursions on natural logs, so values far below
1e-300 keep full relative precision.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lostmid.checks import check_choice, check_position, check_positive
from lostmid.errors import UserError
from lostmid.theory._ops import LinearOps, LogOps, Ops
from lostmid.theory.masks import Causal, Mask, MaskLike, parse_mask
from lostmid.theory.schedules import resolve_alphas
from lostmid.typing import Float, Int

KERNELS = ("rollout", "jacobian")  # the kernel names, declared once for the package
DENSE_MAX_LENGTH = 4096

AlphaLike = float | Sequence[float] | Float[np.ndarray, " H"]


def path_weights(alphas: AlphaLike, layers: int | None = None) -> Float[np.ndarray, " K"]:
    """Binomial mixture weights b_k, k = 0..H: coefficients of prod_l ((1-a_l) + a_l z).

    b_k is the total weight of paths that take exactly k attention hops.

    >>> path_weights(0.5, 2)
    array([0.25, 0.5 , 0.25])
    """
    return _path_weights(_alphas(alphas, layers))


def jacobian_path_weights(alphas: AlphaLike, layers: int | None = None) -> Float[np.ndarray, " K"]:
    """Weights e_k of the jacobian kernel: coefficients of prod_l ((1-a_l)^2 + a_l^2 z).

    >>> jacobian_path_weights(0.5, 2)
    array([0.0625, 0.125 , 0.0625])
    """
    return _jacobian_weights(_alphas(alphas, layers))


def influence_row(
    length: int,
    layers: int,
    alpha: AlphaLike,
    mask: MaskLike = "causal",
    kernel: str = "rollout",
    target: int | None = None,
) -> Float[np.ndarray, " L"]:
    """Influence of every input position on ``target`` after ``layers`` layers (float64).

    Args:
        length: sequence length L >= 1.
        layers: depth H >= 0.
        alpha: residual strength a in [0, 1], scalar or one per layer.
        mask: a :class:`Mask` or its spec (``causal``, ``bidirectional``, ``sliding:W``,
            ``prefix:P``).
        kernel: ``rollout`` or ``jacobian`` (see the module docstring).
        target: 1-indexed output position t (default L).

    Returns:
        Array of L floats; entry j-1 is the influence of position j on position t.
        Entries below ~1e-308 underflow to 0: use :func:`log_influence_row` for those.

    >>> row = influence_row(4, 1, 1.0)  # one pure-attention causal layer: 1/L each
    >>> row.tolist()
    [0.25, 0.25, 0.25, 0.25]
    """
    m, t, a = _resolve(length, layers, alpha, mask, kernel, target)
    return _influence(m, length, a, kernel, t, LinearOps)


def log_influence_row(
    length: int,
    layers: int,
    alpha: AlphaLike,
    mask: MaskLike = "causal",
    kernel: str = "rollout",
    target: int | None = None,
) -> Float[np.ndarray, " L"]:
    """Natural log of :func:`influence_row`, computed entirely in the log domain.

    Exact in relative terms even where the influence is far below 1e-300;
    unreachable positions are -inf.

    >>> float(np.exp(log_influence_row(4, 2, 1.0)[-1]))  # (M^2)[4,4] = 1/16
    0.0625
    """
    m, t, a = _resolve(length, layers, alpha, mask, kernel, target)
    return _influence(m, length, a, kernel, t, LogOps)


@dataclass(frozen=True)
class PathDecomposition:
    """Influence split by path length k (number of attention hops), k = 0..H.

    Attributes:
        weights: mixture weights (b_k for rollout, e_k for jacobian).
        rows: rows (A^k)[t, :].
        contributions: weight times row (times row again for jacobian); their sum over
            k is the rollout influence (the squared jacobian influence).
        dominant_hops: the k with the largest contribution at each position.
    """

    weights: Float[np.ndarray, " K"]
    rows: Float[np.ndarray, "K L"]
    contributions: Float[np.ndarray, "K L"]
    dominant_hops: Int[np.ndarray, " L"]


def path_decomposition(
    length: int,
    layers: int,
    alpha: AlphaLike,
    mask: MaskLike = "causal",
    kernel: str = "rollout",
    target: int | None = None,
) -> PathDecomposition:
    """Rows of A^k and the weight of each path length, so a user sees which paths carry
    the influence at each position. Costs O(L H) time and memory.

    >>> d = path_decomposition(8, 3, 0.5)
    >>> np.allclose(d.contributions.sum(axis=0), influence_row(8, 3, 0.5))
    True
    """
    m, t, a = _resolve(length, layers, alpha, mask, kernel, target)
    weights = _path_weights(a) if kernel == "rollout" else _jacobian_weights(a)
    rows = np.zeros((layers + 1, length))
    rows[0, t - 1] = 1.0
    for k in range(1, layers + 1):
        rows[k] = m.left_multiply(rows[k - 1])
    power = 1 if kernel == "rollout" else 2
    contributions = weights[:, None] * rows**power
    return PathDecomposition(weights, rows, contributions, np.argmax(contributions, axis=0))


def influence_matrix(
    length: int,
    layers: int,
    alpha: AlphaLike,
    mask: MaskLike = "causal",
    kernel: str = "rollout",
) -> Float[np.ndarray, "L L"]:
    """The full L x L influence matrix (row t: influence on target t), for small L.

    Dense: O(L^3 H) time, so L is limited to ``DENSE_MAX_LENGTH``.

    >>> influence_matrix(2, 1, 0.5).tolist()  # (I + M) / 2 with M = [[1, 0], [1/2, 1/2]]
    [[1.0, 0.0], [0.25, 0.75]]
    """
    m, _, a = _resolve(length, layers, alpha, mask, kernel, None)
    if length > DENSE_MAX_LENGTH:
        raise UserError(
            f"the full influence matrix is dense; length {length} exceeds "
            f"{DENSE_MAX_LENGTH}, use influence_row for long sequences"
        )
    dense = m.dense(length)
    if kernel == "rollout":
        out = np.zeros((length, length))
        for b in _path_weights(a)[::-1]:  # Horner: P <- P A + b_k I
            out = out @ dense
            out[np.diag_indices(length)] += b
        return out
    power = np.eye(length)
    acc = np.zeros((length, length))
    for k, e in enumerate(_jacobian_weights(a)):
        if k:
            power = power @ dense
        acc += e * power**2
    return np.sqrt(acc)


# -- the one check of the public entry points ---------------------------------------------


def _resolve(
    length: int,
    layers: int,
    alpha: AlphaLike,
    mask: MaskLike,
    kernel: str,
    target: int | None,
) -> tuple[Mask, int, Float[np.ndarray, " H"]]:
    """Validate the arguments of a public function: (mask, 1-indexed target, alphas)."""
    check_positive("length", length)
    a = resolve_alphas(alpha, layers)
    check_choice("kernel", kernel, KERNELS)
    m = parse_mask(mask)
    m.validate(length)
    return m, check_position("target", target, length), a


def _alphas(alphas: AlphaLike, layers: int | None) -> Float[np.ndarray, " H"]:
    return resolve_alphas(alphas, int(np.size(alphas)) if layers is None else layers)


# -- internals: resolved values in, no checks ----------------------------------------------


def _path_weights(a: Float[np.ndarray, " H"]) -> Float[np.ndarray, " K"]:
    return _poly_product(1.0 - a, a)


def _jacobian_weights(a: Float[np.ndarray, " H"]) -> Float[np.ndarray, " K"]:
    return _poly_product((1.0 - a) ** 2, a**2)


def _poly_product(const: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """Coefficients of prod_l (const_l + slope_l z), lowest degree first."""
    coeffs = np.ones(1)
    for c, s in zip(const, slope, strict=True):
        nxt = np.zeros(coeffs.size + 1)
        nxt[:-1] += c * coeffs
        nxt[1:] += s * coeffs
        coeffs = nxt
    return coeffs


def _influence(
    m: Mask, length: int, a: Float[np.ndarray, " H"], kernel: str, t: int, ops: Ops
) -> Float[np.ndarray, " L"]:
    """The influence row on target t (1-indexed), in the representation of ``ops``."""
    # Rows i <= n of A only see columns j <= n for every mask here, so the problem
    # restricted to the support's upper end n is exact; the rest is structurally zero.
    n = m.support(length, t, a.size)[1]
    if kernel == "rollout" and isinstance(m, Causal) and not ops.log:
        row = _causal_rollout_row(n, t, _path_weights(a))
    elif kernel == "rollout":
        row = _horner_row(m, n, t, _path_weights(a), ops)
    else:
        row = _jacobian_row(m, n, t, _jacobian_weights(a), ops)
    out = np.full(length, ops.zero)
    out[:n] = row
    return out


def _horner_row(m: Mask, n: int, t: int, weights: np.ndarray, ops: Ops) -> np.ndarray:
    """sum_k b_k e_t A^k by Horner's rule: acc <- acc A + b_k e_t, k = H..0."""
    log_w = ops.encode(weights)
    acc = np.full(n, ops.zero)
    for k in range(weights.size - 1, -1, -1):
        if k < weights.size - 1:
            acc = m.left_multiply(acc, ops)
        acc[t - 1] = ops.add(acc[t - 1], log_w[k])
    return acc


def _causal_rollout_row(n: int, t: int, weights: np.ndarray) -> np.ndarray:
    """Fast float64 path of :func:`_horner_row` for the causal mask.

    Two passes over memory per layer (scale by 1/i, suffix sum), both in place.
    """
    inv_i = 1.0 / np.arange(1, n + 1, dtype=np.float64)
    acc = np.zeros(n)
    backwards = acc[::-1]
    acc[t - 1] = weights[-1]
    for b in weights[-2::-1]:
        np.multiply(acc, inv_i, out=acc)
        np.cumsum(backwards, out=backwards)
        acc[t - 1] += b
    return acc


def _jacobian_row(m: Mask, n: int, t: int, weights: np.ndarray, ops: Ops) -> np.ndarray:
    """sqrt(sum_k e_k (e_t A^k)^2), carrying r_k = e_t A^k forward."""
    log_w = ops.encode(weights)
    r = np.full(n, ops.zero)
    r[t - 1] = ops.one
    acc = ops.scale(ops.square(r), log_w[0])
    for k in range(1, weights.size):
        r = m.left_multiply(r, ops)
        acc = ops.add(acc, ops.scale(ops.square(r), log_w[k]))
    return ops.sqrt(acc)
