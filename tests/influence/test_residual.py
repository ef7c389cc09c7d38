"""Residual strength lambda_l = mean ||a_l|| / (||x_l|| + ||a_l||): known answers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lostmid.errors import UserError
from lostmid.influence import random_token_ids, residual_strength
from lostmid.models import load_model


@pytest.mark.parametrize("spec", ["tiny-qwen2", "tiny-gpt2"])
def test_zero_attention_output_gives_zero_and_huge_gives_one(spec) -> None:
    ids = random_token_ids(256, 2, 10, seed=0)
    loaded = load_model(spec, dtype="float64")
    base = residual_strength(loaded, ids)
    assert base.shape == (2,) and np.all((base > 0) & (base < 1))
    blocks = loaded.adapter.blocks(loaded.model)
    proj = [
        loaded.adapter.attention(b).o_proj
        if spec == "tiny-qwen2"
        else loaded.adapter.attention(b).c_proj
        for b in blocks
    ]
    with torch.no_grad():
        for p in proj:
            p.weight.zero_()
            if getattr(p, "bias", None) is not None:
                p.bias.zero_()
    np.testing.assert_array_equal(residual_strength(loaded, ids), 0.0)
    with torch.no_grad():
        proj[0].weight.fill_(1e9)
    assert residual_strength(loaded, ids)[0] > 1 - 1e-6


def test_matches_a_hand_computation_on_layer_one() -> None:
    loaded = load_model("tiny-qwen2", dtype="float64")
    ids = random_token_ids(256, 1, 8, seed=1)
    x = loaded.adapter.token_embedding(loaded.model)(ids)  # (1, L, d): input of block 1
    block = loaded.adapter.blocks(loaded.model)[0]
    kept = {}

    def keep(module, args, output) -> None:
        kept["a"] = output[0]

    handle = block.self_attn.register_forward_hook(keep)
    with torch.no_grad():
        loaded.adapter.base(loaded.model)(inputs_embeds=x, use_cache=False)
    handle.remove()
    a_norm, x_norm = kept["a"].norm(dim=-1), x.norm(dim=-1)
    expected = float((a_norm / (x_norm + a_norm)).mean())
    assert residual_strength(loaded, ids)[0] == pytest.approx(expected, rel=1e-12)


def test_generic_family_says_it_needs_an_adapter(unknown_family_dir) -> None:
    loaded = load_model(str(unknown_family_dir))
    with pytest.raises(UserError, match="needs a family adapter"):
        residual_strength(loaded, random_token_ids(64, 1, 8, seed=0))
