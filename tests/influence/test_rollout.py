"""The measured-attention rollout: the uniform theory when attention is uniform, and the
attention a model really computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lostmid.errors import UserError
from lostmid.influence.rollout import measured_attention, rollout_row
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
