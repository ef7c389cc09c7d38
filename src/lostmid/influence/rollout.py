"""Rollouts through attention: the residual-aware rollout of the peer project (Herasimchyk
et al., arXiv 2602.16837) and two rollouts through a model's *measured* attention.

The rollout. Per layer l, with A_l a row-stochastic causal attention matrix and
lambda_l in [0, 1] the weight of the attention branch, R_l = (1 - lambda_l) I +
lambda_l A_l and P = R_H ... R_1 (layer 1 applied first). The influence of position j
on the target t is row t of P (:func:`rollout_matrix`, :func:`rollout_row`). With every
A_l the Cesàro matrix this is the paper's uniform theory (tested).

The peer's recipe, as their code computes it (github.com/ml-uhh/position-bias, commit
a514e09cb3e0688974a63816530e5849d5c2b8ba; read, not copied):

* ``src/rollout/main.py``: ``add_residual`` R = (1 - lambda) I + lambda A (asserting
  0 <= lambda <= 1), ``rollout`` P = R_T ... R_0 over *all* layers, and
  ``plot_last_row_distribution`` keeps the *last row* (target t = L), divided by its
  sum.
* ``src/rollout/attention.py``, ``content_prior.py``, ``positional_encoding.py``: A_l is
  not a measured attention matrix but a *modelled* one, the uniform mean over heads
  (``head_weights: null``) of each head's masked row softmax of
  base_h + diag_h [i = j] - alpha_h (i - j) at temperature 1 (ALiBi slope alpha_h;
  their models are BLOOM, MPT and Falcon-RW, all ALiBi).
* ``src/visualization/attention_stats.ipynb`` ("All content") and
  ``config/rollout/alibi/all_content/*``: base_h is the mean of the head's q.k over the
  strictly lower triangle and diag_h the mean over the diagonal minus that, per layer
  and head, from the *unscaled* q.k of the forward pass averaged over the inputs
  (``src/models/bloom.py``/``falcon.py``: ``qk_prod`` is taken before the 1/sqrt(d)
  factor); base_h is constant along a row and cancels in the softmax.
* ``src/metrics/metrics.py``, ``src/util/hooks.py``: lambda_l is the mean over tokens
  and inputs of ||a_l|| / (||x_l|| + ||a_l||), x_l the block input and a_l the attention
  output (``effective_attention_strength``; the README's "mean residual connection
  strength"): here :func:`lostmid.influence.residual.forward_ratio`, written to every
  measure.json as ``residual_strength_forward``.
* ``src/main.py``, ``src/visualization/influence_stats.ipynb``: the measured side is
  the L2 norm over the embedding of d p_top1 / d x_j (p_top1 the probability of the
  argmax next token at the last position; gradient-checkpointed, bfloat16), averaged
  over 1,000 real-text inputs, divided by its sum; compared by Spearman and by
  ``scipy.stats.wasserstein_distance`` on positions 0..n-1 divided by n - 1 (the W1 of
  :func:`lostmid.compare.metrics.wasserstein1`).

:func:`peer_content_scores` and :func:`peer_attention` are that recipe; for a RoPE
model (no ALiBi) ``slopes`` is None and each head's modelled attention is uniform over
the mask with a diagonal boost: the position dependence that rotary embeddings put into
q.k is averaged away with everything else but the diagonal.

Two rollouts through the measured attention (same R_l):

* :func:`measured_attention`: the eager weights averaged over heads and inputs;
* :func:`value_weighted_attention` (ours, after Kobayashi et al. 2020, "Attention is
  not only a weight"): each edge i -> j of head h weighted by what j actually sends,
  ||W_O^h v_j^h|| (:func:`value_norms`), summed over heads and renormalised per row.
  A sink (a token that takes much attention and sends a near-zero value) loses the
  weight that plain attention gives it. Exact for a layer whose heads all write
  c_h x_j (a fixed attention, a linear value path, inputs of one norm): then the
  Jacobian's norms are (1 - a) delta_tj + a A~_tj with a = sum c_h / (1 + sum c_h)
  (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from lostmid.errors import UserError
from lostmid.models.attention import attention_kernel
from lostmid.theory.masks import parse_mask
from lostmid.typing import Float

if TYPE_CHECKING:
    from lostmid.models import LoadedModel

# axis names beyond lostmid.typing's: n attention heads, g key-value heads, e head width,
# D model width


def _square_stack(attentions: Sequence[np.ndarray], strengths: Sequence[float]) -> list[np.ndarray]:
    """The attention matrices as float64 (L, L) arrays, checked against each other and
    against ``strengths`` (one lambda_l in [0, 1] a layer)."""
    if len(attentions) != len(strengths) or not attentions:
        raise UserError(f"{len(attentions)} attention matrices for {len(strengths)} strengths")
    mats = [np.asarray(a, dtype=np.float64) for a in attentions]
    length = mats[0].shape[0] if mats[0].ndim == 2 else -1
    for layer, mat in enumerate(mats, start=1):
        if mat.ndim != 2 or mat.shape != (length, length):
            raise UserError(
                f"attention matrix of layer {layer} has shape {mat.shape}; every layer's "
                f"must be square and the same size, ({length}, {length}) as layer 1's"
            )
        if not np.all(np.isfinite(mat)):
            raise UserError(f"attention matrix of layer {layer} has non-finite entries")
    lambdas = np.asarray(strengths, dtype=np.float64)
    if not np.all((lambdas >= 0.0) & (lambdas <= 1.0)):
        raise UserError(f"strengths must lie in [0, 1] (R = (1 - a) I + a A), got {lambdas}")
    return mats


def rollout_matrix(
    attentions: Sequence[Float[np.ndarray, "L L"]], strengths: Sequence[float]
) -> Float[np.ndarray, "L L"]:
    """P = R_H ... R_1, R_l = (1 - a_l) I + a_l A_l, layer 1 first (the peer's ``rollout``
    of ``add_residual``): row i is where position i draws from after all layers, and
    sums to 1 when every A_l is row-stochastic.

    >>> rollout_matrix([np.eye(2)], [0.7]).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    mats = _square_stack(attentions, strengths)
    eye = np.eye(mats[0].shape[0])
    product = eye.copy()
    for a_l, attention in zip(strengths, mats, strict=True):
        product = ((1.0 - a_l) * eye + a_l * attention) @ product
    return product


def rollout_row(
    attentions: Sequence[Float[np.ndarray, "L L"]], strengths: Sequence[float], target: int
) -> Float[np.ndarray, " L"]:
    """Row ``target`` (1-indexed) of R_H ... R_1 (:func:`rollout_matrix`), computed right
    to left as a row vector: v <- v R_l for l = H..1, from the unit vector at t.

    >>> A = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]  # uniform causal attention
    >>> rollout_row([A], [1.0], 3).round(3).tolist()
    [0.333, 0.333, 0.333]
    """
    mats = _square_stack(attentions, strengths)
    length = mats[0].shape[0]
    if not 1 <= target <= length:
        raise UserError(f"target {target} is not a position 1..{length}")
    v = np.zeros(length)
    v[target - 1] = 1.0
    for a_l, attention in zip(reversed(list(strengths)), reversed(mats), strict=True):
        v = (1.0 - a_l) * v + a_l * (v @ attention)
    return v


def _batched(x: torch.Tensor | np.ndarray, dims: int, name: str) -> torch.Tensor:
    """``x`` as a float64 tensor with a leading batch axis (added when it has ``dims - 1``
    axes)."""
    t = torch.as_tensor(x).to(torch.float64)
    if t.ndim == dims - 1:
        t = t.unsqueeze(0)
    if t.ndim != dims:
        raise UserError(f"{name} has {t.ndim} axes; expected {dims - 1} or {dims} (with a batch)")
    return t


def value_norms(
    values: Float[torch.Tensor, "B g L e"], output_weight: Float[torch.Tensor, "D ne"], heads: int
) -> Float[torch.Tensor, "B n L"]:
    """||W_O^h v_j^h|| per input, head h and position j: the norm of what j sends through
    head h into the residual stream (before any branch post-norm).

    Args:
        values: the value vectors as the attention kernel gets them, (B, g, L, e) with g
            key-value heads (each read by ``heads / g`` query heads, grouped as
            transformers' ``repeat_kv``: query head h reads key-value head h // (n / g)).
        output_weight: the output projection's weight (D, n e) (``nn.Linear`` layout:
            the columns h e .. (h + 1) e - 1 are W_O^h).
        heads: n, the query heads.

    >>> v = torch.ones(1, 1, 2, 2, dtype=torch.float64)  # 1 key-value head, 2 positions, width 2
    >>> w = torch.cat([torch.eye(2), 3 * torch.eye(2)], dim=1)  # 2 heads: W_O^1 = I, W_O^2 = 3 I
    >>> (value_norms(v, w, 2)[0] ** 2).round(decimals=9).tolist()  # 1 + 1 and 9 + 9
    [[2.0, 2.0], [18.0, 18.0]]
    """
    if values.ndim != 4:
        raise UserError(
            f"values must be (B, kv heads, L, head width), got shape {tuple(values.shape)}"
        )
    _, groups, _, width = values.shape
    if heads < 1 or heads % groups:
        raise UserError(f"{heads} query heads cannot share {groups} key-value heads evenly")
    if output_weight.ndim != 2 or output_weight.shape[1] != heads * width:
        raise UserError(
            f"output projection weight has shape {tuple(output_weight.shape)}; expected "
            f"(model width, {heads} heads x {width}) = (D, {heads * width})"
        )
    per_head = values.repeat_interleave(heads // groups, dim=1)  # (B, n, L, e)
    w = output_weight.to(values.dtype).reshape(output_weight.shape[0], heads, width)  # (D, n, e)
    return torch.einsum("bhle,dhe->bhld", per_head, w).norm(dim=-1)


def value_weighted_attention(
    attention: Float[torch.Tensor, "B n L L"] | Float[np.ndarray, "B n L L"],
    norms: Float[torch.Tensor, "B n L"] | Float[np.ndarray, "B n L"],
) -> Float[np.ndarray, "L L"]:
    """Value-norm weighted attention: W_ij = sum_h A^h_ij ||W_O^h v^h_j|| (Kobayashi et al.
    2020), each row divided by its sum, per input, then averaged over the inputs.

    ``attention`` (B, n, L, L) and ``norms`` (B, n, L) from :func:`value_norms`; without
    the batch axis, one input. A head whose value norms are equal at every position
    keeps its attention row; a position that sends nothing gets no weight.

    >>> sink = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # row 2 attends to position 1 only
    >>> both = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    >>> norms = torch.tensor([[0.0, 1.0], [1.0, 1.0]])  # the sink head's position 1 sends 0
    >>> value_weighted_attention(torch.stack([sink, both]), norms)[1].tolist()
    [0.5, 0.5]
    """
    a = _batched(attention, 4, "attention")
    n = _batched(norms, 3, "norms")
    batch, heads, rows, cols = a.shape
    if rows != cols or n.shape != (batch, heads, cols):
        raise UserError(
            f"attention of shape {tuple(a.shape)} and value norms of shape {tuple(n.shape)} "
            f"do not match: expected (B, n, L, L) and (B, n, L)"
        )
    if (
        bool((n < 0).any())
        or not bool(torch.isfinite(n).all())
        or not bool(torch.isfinite(a).all())
    ):
        raise UserError("attention and value norms must be finite, norms non-negative")
    weights = torch.einsum("bhij,bhj->bij", a, n)  # (B, L, L)
    sums = weights.sum(dim=-1, keepdim=True)
    if bool((sums <= 0).any()):
        b, i, _ = (sums <= 0).nonzero()[0].tolist()
        raise UserError(f"row {i + 1} of input {b + 1} gets no value-weighted attention (all zero)")
    return (weights / sums).mean(dim=0).numpy()


def peer_content_scores(
    qk: Float[torch.Tensor, "B n L L"] | Float[np.ndarray, "B n L L"],
) -> tuple[Float[np.ndarray, " n"], Float[np.ndarray, " n"]]:
    """The peer's content prior from a layer's raw (unscaled) query-key products q_i.k_j:
    (diagonal, base) per head, base the mean of q.k over the strictly lower triangle
    and diagonal the mean over the diagonal minus base, both over inputs and positions
    (their ``attention_stats.ipynb``, "All content": ``Difference`` and ``Lower``).

    >>> qk = torch.tensor([[[4.0, 9.0], [1.0, 2.0]]])  # one head; q.k above the diagonal is ignored
    >>> [x.tolist() for x in peer_content_scores(qk)]
    [[2.0], [1.0]]
    """
    t = _batched(qk, 4, "qk")
    length = t.shape[-1]
    if t.shape[-2] != length or length < 2:
        raise UserError(f"qk must be (B, n, L, L) with L >= 2, got shape {tuple(t.shape)}")
    diag = t.diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2))  # (n,)
    lower = torch.ones(length, length, dtype=torch.bool).tril(-1)
    base = t[..., lower].mean(dim=(0, 2))
    return (diag - base).numpy(), base.numpy()


def peer_attention(
    diagonal: Sequence[float] | np.ndarray,
    base: Sequence[float] | np.ndarray,
    length: int,
    *,
    slopes: Sequence[float] | np.ndarray | None = None,
    mask: str = "causal",
    temperature: float = 1.0,
) -> Float[np.ndarray, "L L"]:
    """The peer's modelled attention of one layer: the uniform mean over heads h of the
    row softmax, under ``mask``, of (base_h + diagonal_h [i = j] - slope_h (i - j)) /
    temperature (ALiBi slope_h; ``slopes`` None for a model without ALiBi).

    >>> peer_attention([np.log(2.0)], [5.0], 2).round(3).tolist()  # base cancels
    [[1.0, 0.0], [0.333, 0.667]]
    """
    diag = np.asarray(diagonal, dtype=np.float64)
    shift = np.asarray(base, dtype=np.float64)
    heads = diag.size
    alpha = np.zeros(heads) if slopes is None else np.asarray(slopes, dtype=np.float64)
    if diag.ndim != 1 or shift.shape != diag.shape or alpha.shape != diag.shape or heads == 0:
        raise UserError(
            f"one diagonal score, base score and slope per head: got {diag.shape}, "
            f"{shift.shape} and {alpha.shape}"
        )
    if not (
        np.all(np.isfinite(diag)) and np.all(np.isfinite(shift)) and np.all(np.isfinite(alpha))
    ):
        raise UserError("content scores and slopes must be finite")
    if not temperature > 0:
        raise UserError(f"temperature must be > 0, got {temperature}")
    support = parse_mask(mask).dense(length) > 0  # (L, L)
    i, j = np.indices((length, length))
    out = np.zeros((length, length))
    for h in range(heads):
        scores = (shift[h] + diag[h] * (i == j) - alpha[h] * (i - j)) / temperature
        scores = np.where(support, scores, -np.inf)
        scores -= scores.max(axis=1, keepdims=True)
        e = np.exp(scores)
        out += e / e.sum(axis=1, keepdims=True)
    return out / heads


def measured_attention(
    loaded: LoadedModel, input_ids: torch.Tensor
) -> list[Float[np.ndarray, "L L"]]:
    """Each layer's attention, averaged over heads and over the inputs (B, L), layer 1 first.

    Runs the model's blocks (not its output head: no logits are read) with
    ``output_attentions`` (the eager kernel materialises the weights).
    """
    model = loaded.model
    base = loaded.adapter.base(model)
    # the weights exist only in eager attention
    with torch.no_grad(), attention_kernel(model, "eager"):
        ids = input_ids.to(loaded.input_device)
        out = base(input_ids=ids, output_attentions=True, use_cache=False)
    if not out.attentions or out.attentions[0] is None:
        raise UserError(f"{loaded.spec}: the model returns no attention weights")
    return [a.float().mean(dim=(0, 1)).cpu().numpy() for a in out.attentions]  # (L, L)
