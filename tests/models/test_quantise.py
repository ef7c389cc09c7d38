"""Twins quantised as their checkpoint's file (lostmid.models.quantise.quantise_like):
the gguf package's own rounding, the file's scheme or its stated stand-in."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lostmid.models import load_model
from lostmid.models.quantise import file_scheme, quantise_like


def test_the_scheme_follows_the_file() -> None:
    assert file_scheme({"F32": 61, "Q4_1": 211})[0] == "Q4_1"
    scheme, note = file_scheme({"F32": 10, "Q4_K": 150, "Q6_K": 20})
    assert scheme == "Q4_1" and "standing in for the file's Q4_K" in note
    with pytest.raises(ValueError, match="no quantised tensor"):
        file_scheme({"F32": 3})


def test_quantise_like_rounds_as_gguf_reads_and_leaves_norms() -> None:
    from gguf import GGMLQuantizationType, quants

    model = load_model("tiny-qwen2", init="random", seed=0).model
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    coarse = quantise_like(model, "Q4_1")
    assert coarse["matrices"] > 0 and 0.03 < coarse["relative_rms_change"] < 0.2
    for name, p in model.named_parameters():
        if p.ndim < 2:
            assert torch.equal(p, before[name])  # norms stay float
    weight = before["model.layers.0.mlp.up_proj.weight"].numpy()
    q = GGMLQuantizationType.Q4_1
    expected = quants.dequantize(quants.quantize(weight, q), q).reshape(weight.shape)
    got = dict(model.named_parameters())["model.layers.0.mlp.up_proj.weight"].detach().numpy()
    np.testing.assert_array_equal(got, expected)
    fine = quantise_like(load_model("tiny-qwen2", init="random", seed=0).model, "Q8_0")
    assert fine["relative_rms_change"] < coarse["relative_rms_change"] / 5
