"""Residual strength: the theory's a_l = s/(1+s) by default, the peer's forward ratio
lambda_l = mean ||a_l|| / (||x_l|| + ||a_l||) by name; known answers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lostmid.errors import UserError
from lostmid.influence import forward_ratio, random_token_ids, residual_strength
from lostmid.models import load_model


@pytest.mark.parametrize("spec", ["tiny-qwen2", "tiny-gpt2"])
def test_zero_attention_output_gives_zero_and_huge_gives_one(spec) -> None:
    ids = random_token_ids(256, 2, 10, seed=0)
    loaded = load_model(spec, dtype="float64")
    base = forward_ratio(loaded, ids)
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
    np.testing.assert_array_equal(forward_ratio(loaded, ids), 0.0)
    with torch.no_grad():
        proj[0].weight.fill_(1e9)
    assert forward_ratio(loaded, ids)[0] > 1 - 1e-6


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
    assert forward_ratio(loaded, ids)[0] == pytest.approx(expected, rel=1e-12)


def test_generic_family_says_it_needs_an_adapter(unknown_family_dir) -> None:
    loaded = load_model(str(unknown_family_dir))
    with pytest.raises(UserError, match="needs a family adapter"):
        forward_ratio(loaded, random_token_ids(64, 1, 8, seed=0))


def test_jacobian_method_is_s_over_one_plus_s_of_the_branch_gain() -> None:
    from lostmid.influence.gains import branch_gains

    loaded = load_model("tiny-qwen2", dtype="float64")
    ids = random_token_ids(256, 2, 12, seed=3)
    gains = branch_gains(loaded, ids, directions=3, seed=7)
    got = residual_strength(loaded, ids, directions=3, seed=7)  # the default: jacobian
    np.testing.assert_allclose(got, gains.gain / (1 + gains.gain), rtol=1e-14)
    forward = residual_strength(loaded, ids, method="forward")  # the peer's, by name only
    np.testing.assert_array_equal(forward, forward_ratio(loaded, ids))
    assert np.all(forward < got)


def test_strength_from_gain_inverts_the_layer_operator() -> None:
    """(1-a) I + a A W is (I + s A W) / (1+s) for a = s/(1+s): check on random matrices."""
    from lostmid.influence.gains import strength_from_gain

    gen = np.random.default_rng(0)
    attention, w = gen.random((5, 5)), gen.normal(size=(5, 5))
    for s in (0.0, 0.3, 7.0):
        a = float(strength_from_gain(s))
        left = (1 - a) * np.eye(5) + a * attention @ w
        np.testing.assert_allclose(left, (np.eye(5) + s * attention @ w) / (1 + s), atol=1e-14)
    with pytest.raises(UserError, match="branch gains must be finite and >= 0"):
        strength_from_gain(np.array([0.5, -1.0]))


def test_forward_ratio_shrinks_like_one_over_sqrt_position() -> None:
    """Uniform attention at depth 1: lambda ~ mean_i r_i / (1 + r_i), r_i = s / sqrt(i).

    The branch averages i nearly independent values of norm ~ s ||x||, so the forward
    ratio is far below s / (1 + s) and falls with L; the Jacobian strength does not.
    """
    from lostmid.influence.gains import branch_gains

    loaded = load_model("tiny-qwen2", dtype="float64", config_overrides={"num_hidden_layers": 1})
    with torch.no_grad():
        attn = loaded.adapter.attention(loaded.adapter.blocks(loaded.model)[0])
        for proj in (attn.q_proj, attn.k_proj):
            proj.weight.zero_()
            proj.bias.zero_()
    forward, jacobian = [], []
    for length in (16, 64):
        ids = random_token_ids(256, 8, length, seed=0)
        s = float(branch_gains(loaded, ids, exact=True).gain[0])
        r = s / np.sqrt(np.arange(1, length + 1))
        lam = float(forward_ratio(loaded, ids)[0])
        assert lam == pytest.approx(float(np.mean(r / (1 + r))), rel=0.15)
        forward.append(lam)
        jacobian.append(s / (1 + s))
    assert forward[1] < 0.8 * forward[0]
    assert jacobian[1] == pytest.approx(jacobian[0], rel=0.05)


def test_unknown_method_is_refused() -> None:
    loaded = load_model("tiny-gpt2")
    with pytest.raises(UserError, match="residual strength method 'ratio' unknown"):
        residual_strength(loaded, random_token_ids(256, 1, 4, seed=0), method="ratio")


def test_forward_ratio_reads_the_branch_not_the_stream_in_bloom() -> None:
    """BLOOM's attention module returns x + branch; the ratio must read the branch (the
    adapter's attention_out), so a zero output projection gives exactly 0."""
    loaded = load_model("tiny-bloom", dtype="float64")
    ids = random_token_ids(loaded.vocab_size, 2, 8, seed=0)
    assert np.all(forward_ratio(loaded, ids) < 0.5)
    with torch.no_grad():
        for block in loaded.adapter.blocks(loaded.model):
            block.self_attention.dense.weight.zero_()
            block.self_attention.dense.bias.zero_()
    np.testing.assert_array_equal(forward_ratio(loaded, ids), 0.0)


@pytest.mark.parametrize(("spec", "batch"), [("tiny-qwen2", 1), ("tiny-gpt2", 2), ("tiny-opt", 3)])
def test_gains_and_ratio_from_one_forward_are_the_two_apart(spec, batch) -> None:
    """One recorded forward a batch for both: bit for bit the gains and the ratio that
    branch_gains and forward_ratio give on their own (OPT records (B L, d) outputs)."""
    from lostmid.influence import branch_gains, gains_and_forward_ratio

    loaded = load_model(spec, seed=1)
    ids = random_token_ids(loaded.vocab_size, 3, 9, seed=2)
    gains, ratio = gains_and_forward_ratio(loaded, ids, directions=2, seed=5, batch_size=batch)
    apart = branch_gains(loaded, ids, directions=2, seed=5, batch_size=batch)
    np.testing.assert_array_equal(ratio, forward_ratio(loaded, ids, batch_size=batch))
    np.testing.assert_array_equal(gains.per_position, apart.per_position)
    np.testing.assert_array_equal(gains.mlp_coherence, apart.mlp_coherence)
    assert not np.array_equal(ratio, forward_ratio(loaded, ids[:2]))  # the samples count


def test_measure_keeps_the_forward_ratio_when_the_gains_stop(monkeypatch) -> None:
    """A model whose gains stop (here: a non-finite gain) still gets the ratio, from a
    forward of its own, and a note saying why the gains are missing."""
    from lostmid.influence import gain_passes
    from lostmid.influence.config import MeasureConfig
    from lostmid.influence.run import measure_strengths

    loaded = load_model("tiny-llama", seed=0)
    ids = random_token_ids(loaded.vocab_size, 2, 6, seed=0)
    real = gain_passes.layer_vjps
    monkeypatch.setattr(
        "lostmid.influence.gains.layer_vjps",
        lambda *a: tuple(g * float("nan") for g in real(*a)),
    )
    gains, forward, masks, notes = measure_strengths(loaded, ids, MeasureConfig(model="x"))
    assert gains is None and masks is not None
    np.testing.assert_array_equal(forward, forward_ratio(loaded, ids))
    assert len(notes) == 1 and "branch gains skipped" in notes[0] and "non-finite" in notes[0]
