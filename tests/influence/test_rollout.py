"""The measured-attention rollout: the uniform theory when attention is uniform, and the
attention a model really computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lostmid.errors import UserError
from lostmid.influence.rollout import (
    measured_attention,
    peer_attention,
    peer_content_scores,
    rollout_matrix,
    rollout_row,
    value_norms,
    value_weighted_attention,
)
from lostmid.models import load_model
from lostmid.theory.masks import parse_mask


def test_uniform_attention_gives_the_dense_product() -> None:
    length, strengths = 12, [0.9, 0.3, 0.5]
    cesaro = parse_mask("causal").dense(length)  # (L, L) uniform causal attention
    dense = np.eye(length)
    for a in strengths:  # R_H ... R_1, layer 1 applied first
        dense = ((1 - a) * np.eye(length) + a * cesaro) @ dense
    row = rollout_row([cesaro] * 3, strengths, length)
    assert np.allclose(row, dense[-1], atol=1e-12)
    assert row.sum() == pytest.approx(1.0)  # rows of a product of stochastic matrices


def test_measured_attention_is_causal_and_stochastic() -> None:
    loaded = load_model("tiny-qwen2", seed=0)  # sdpa by default: switched to eager inside
    ids = torch.randint(0, 256, (2, 10), generator=torch.Generator().manual_seed(0))
    attention = measured_attention(loaded, ids)
    assert len(attention) == loaded.num_layers
    for a in attention:
        assert a.shape == (10, 10)
        assert np.allclose(a.sum(axis=1), 1.0, atol=1e-5)
        assert np.all(np.triu(a, 1) == 0)
    assert loaded.model.config._attn_implementation == loaded.attention  # restored


@pytest.mark.parametrize("preset", ["tiny-qwen2", "tiny-gpt2", "tiny-gemma3"])
def test_measured_attention_is_the_whole_models(preset: str) -> None:
    """Read from the blocks alone (no output head), the weights the whole model returns."""
    from lostmid.models.attention import attention_kernel

    loaded = load_model(preset, seed=0)
    ids = torch.randint(0, 200, (2, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad(), attention_kernel(loaded.model, "eager"):
        whole = loaded.model(input_ids=ids, output_attentions=True, use_cache=False).attentions
    measured = measured_attention(loaded, ids)
    assert len(measured) == len(whole)
    for mine, theirs in zip(measured, whole, strict=True):
        assert np.array_equal(mine, theirs.float().mean(dim=(0, 1)).numpy())


def test_mismatched_inputs_are_refused() -> None:
    with pytest.raises(UserError, match="2 attention matrices for 1 strengths"):
        rollout_row([np.eye(3), np.eye(3)], [0.5], 3)


# --- the peer's residual-aware rollout and the value-norm weighted attention ---------


def _random_causal_attention(heads: int, length: int, seed: int) -> torch.Tensor:
    """(heads, L, L) row-stochastic causal attention, softmax of random scores."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(heads, length, length, generator=g, dtype=torch.float64)
    future = torch.ones(length, length, dtype=torch.bool).triu(1)
    return scores.masked_fill(future, -torch.inf).softmax(dim=-1)


def test_identity_attention_gives_the_identity_rollout() -> None:
    eye = np.eye(7)
    assert np.array_equal(rollout_matrix([eye] * 4, [0.0, 0.3, 1.0, 0.9]), eye)
    assert np.array_equal(rollout_row([eye] * 4, [0.0, 0.3, 1.0, 0.9], 5), eye[4])


def test_rollout_rows_sum_to_one_and_the_row_is_the_matrixs() -> None:
    layers = [a.numpy() for a in _random_causal_attention(3, 9, seed=0)]
    strengths = [0.2, 0.7, 1.0]
    product = rollout_matrix(layers, strengths)
    assert np.allclose(product.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(np.triu(product, 1) == 0)  # causal stays causal
    for target in (1, 4, 9):
        assert np.allclose(rollout_row(layers, strengths, target), product[target - 1])


def test_value_weighted_rollout_is_the_exact_jacobian_of_a_linear_layer() -> None:
    """One layer y_i = x_i + sum_h sum_j A^h_ij W_O^h W_V x_j with fixed attention and
    W_O^h W_V = c_h I (two query heads reading one key-value head, head width = model
    width), inputs of norm 1: d y_t / d x_j = (delta_tj + sum_h c_h A^h_tj) I, so the
    Jacobian's norms are the rollout of the value-weighted attention with
    a = C / (1 + C), C = sum_h c_h, and not the rollout of the head mean when the
    heads' gains differ (a sink head that sends little)."""
    length, width, target = 6, 4, 6
    gains = torch.tensor([0.05, 2.0], dtype=torch.float64)  # the sink head sends little
    sink = torch.zeros(length, length, dtype=torch.float64)
    sink[:, 0] = 1.0  # every row attends to position 1 only
    attention = torch.stack([sink, _random_causal_attention(1, length, seed=1)[0]])  # (n, L, L)
    q, _ = torch.linalg.qr(
        torch.randn(width, width, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    )
    w_v = q  # one key-value head: v_j = Q x_j
    w_o = torch.cat([c * q.T for c in gains], dim=1)  # (D, n e): W_O^h = c_h Q^T
    x = torch.randn(length, width, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    x = x / x.norm(dim=-1, keepdim=True)

    def layer(inputs: torch.Tensor) -> torch.Tensor:
        v = inputs @ w_v.T  # (L, e)
        heads = [attention[h] @ v @ w_o[:, h * width : (h + 1) * width].T for h in range(2)]
        return inputs + sum(heads)

    jac = torch.autograd.functional.jacobian(
        lambda inputs: layer(inputs)[target - 1], x
    )  # (D, L, D)
    measured = jac.permute(1, 0, 2).reshape(length, -1).norm(dim=-1).numpy()  # (L,)
    by_hand = np.sqrt(width) * (
        np.eye(length)[target - 1] + (gains[:, None] * attention[:, target - 1]).sum(0).numpy()
    )
    assert np.allclose(measured, by_hand, atol=1e-12)

    values = (x @ w_v.T)[None, None]  # (B = 1, g = 1, L, e)
    norms = value_norms(values, w_o, 2)  # (1, n, L): c_h at every position
    assert torch.allclose(norms[0], gains[:, None].expand(2, length))
    total = float(gains.sum())
    weighted = value_weighted_attention(attention[None], norms)
    row = rollout_row([weighted], [total / (1 + total)], target)
    assert np.allclose(row, measured / measured.sum(), atol=1e-12)
    head_mean = rollout_row([attention.mean(dim=0).numpy()], [total / (1 + total)], target)
    assert head_mean[0] > 5 * row[0]  # the head mean follows the sink


def test_value_weighted_attention_is_row_stochastic_and_keeps_equal_norms() -> None:
    attention = _random_causal_attention(3, 8, seed=4)[None].repeat(2, 1, 1, 1)  # (B, n, L, L)
    equal = torch.ones(2, 3, 8)
    assert np.allclose(value_weighted_attention(attention, equal), attention[0].mean(0).numpy())
    norms = torch.rand(2, 3, 8, generator=torch.Generator().manual_seed(5)) + 0.1
    weighted = value_weighted_attention(attention, norms)
    assert np.allclose(weighted.sum(axis=1), 1.0, atol=1e-12)
    assert np.all(np.triu(weighted, 1) == 0)


def test_peer_attention_is_uniform_without_content_and_alibi_by_hand() -> None:
    cesaro = parse_mask("causal").dense(10)
    assert np.allclose(peer_attention(np.zeros(3), np.full(3, 7.0), 10), cesaro, atol=1e-15)
    slope, boost = 0.5, 1.0
    two = peer_attention([boost], [0.0], 3, slopes=[slope])
    row = np.exp([-2 * slope, -slope, boost])  # scores of row 3: -a(3 - j), +boost on j = 3
    assert np.allclose(two[2], row / row.sum())
    window = peer_attention([0.0, 2.0], [0.0, 0.0], 8, mask="sliding:3")
    assert np.all(window[7, :5] == 0) and np.allclose(window.sum(axis=1), 1.0)


def test_peer_content_scores_are_the_diagonal_over_the_lower_mean() -> None:
    qk = torch.zeros(2, 1, 3, 3, dtype=torch.float64)  # two inputs, one head
    qk[0, 0] = torch.tensor([[3.0, 99.0, 99.0], [1.0, 5.0, 99.0], [2.0, 3.0, 7.0]])
    qk[1, 0] = qk[0, 0] + 2.0
    diagonal, base = peer_content_scores(qk)
    assert base.tolist() == [3.0]  # mean of (1, 2, 3) and (3, 4, 5)
    assert diagonal.tolist() == [3.0]  # mean of (3, 5, 7, 5, 7, 9) = 6, minus 3


def test_bad_shapes_are_refused_with_what_was_expected() -> None:
    attention = _random_causal_attention(2, 5, seed=6)[None]  # (1, 2, 5, 5)
    with pytest.raises(
        ValueError, match=r"attention of shape \(1, 2, 5, 5\) and value norms of shape \(1, 2, 4\)"
    ):
        value_weighted_attention(attention, torch.ones(1, 2, 4))
    with pytest.raises(ValueError, match="must be square and the same size"):
        rollout_row([np.eye(3), np.eye(4)], [0.5, 0.5], 3)
    with pytest.raises(ValueError, match="must be square"):
        rollout_matrix([np.ones((3, 2))], [0.5])
    with pytest.raises(ValueError, match=r"strengths must lie in \[0, 1\]"):
        rollout_row([np.eye(3)], [1.5], 3)
    with pytest.raises(ValueError, match="target 4 is not a position 1..3"):
        rollout_row([np.eye(3)], [0.5], 4)
    with pytest.raises(ValueError, match=r"expected \(model width, 2 heads x 3\)"):
        value_norms(torch.ones(1, 1, 5, 3), torch.ones(4, 5), 2)
    with pytest.raises(ValueError, match="3 query heads cannot share 2 key-value heads"):
        value_norms(torch.ones(1, 2, 5, 3), torch.ones(4, 9), 3)
    with pytest.raises(ValueError, match="one diagonal score, base score and slope per head"):
        peer_attention([0.0, 1.0], [0.0], 4)
    with pytest.raises(ValueError, match="gets no value-weighted attention"):
        value_weighted_attention(attention, torch.zeros(1, 2, 5))
