"""Branch gains: dense Jacobians from the weights, the exact depth-1 theory, invariances."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch

from lostmid.compare import wasserstein1
from lostmid.errors import UserError
from lostmid.influence import influence_profile, random_token_ids, residual_strength
from lostmid.influence.gains import BranchGains, branch_gains
from lostmid.influence.passes import NonFiniteError
from lostmid.models import load_model
from lostmid.theory import influence_row

SPECS = ["tiny-qwen2", "tiny-gpt2"]


# References written from the weights, sharing nothing with lostmid.influence.gains.
def _value_path(loaded, block, x: torch.Tensor) -> torch.Tensor:
    """W_O W_V LN1(x) for one position x (d,): the branch output per unit attention weight."""
    if loaded.family == "qwen2":
        attn = block.self_attn
        h = block.input_layernorm(x)
        v = attn.v_proj(h).view(attn.config.num_key_value_heads, attn.head_dim)
        v = v.repeat_interleave(attn.num_key_value_groups, dim=0).reshape(-1)  # kv -> heads
        return attn.o_proj(v)
    d = loaded.hidden_size
    h = block.ln_1(x)
    v = h @ block.attn.c_attn.weight[:, 2 * d :] + block.attn.c_attn.bias[2 * d :]
    return block.attn.c_proj(v[None])[0]


def _mlp_branch(loaded, block, y: torch.Tensor) -> torch.Tensor:
    """MLP(LN2(y)) for one position y (d,)."""
    norm = block.post_attention_layernorm if loaded.family == "qwen2" else block.ln_2
    return block.mlp(norm(y[None]))[0]


def _block_inputs_and_attention(loaded, ids):
    """Block inputs x_l (H, B, L, d) and causal attention outputs a_l (H, B, L, d)."""
    outputs = []
    handles = [
        loaded.adapter.attention(b).register_forward_hook(lambda m, a, o: outputs.append(o[0]))
        for b in loaded.adapter.blocks(loaded.model)
    ]
    with torch.no_grad():
        x = loaded.adapter.token_embedding(loaded.model)(ids)
        out = loaded.adapter.base(loaded.model)(inputs_embeds=x, output_hidden_states=True)
    for h in handles:
        h.remove()
    return out.hidden_states[: loaded.num_layers], outputs


def _uniform_attention(loaded) -> None:
    """W_Q = W_K = 0 (and their biases): every logit is 0, attention is uniform causal."""
    d = loaded.hidden_size
    with torch.no_grad():
        for block in loaded.adapter.blocks(loaded.model):
            attn = loaded.adapter.attention(block)
            if loaded.family == "qwen2":
                for proj in (attn.q_proj, attn.k_proj):
                    proj.weight.zero_()
                    proj.bias.zero_()
            else:
                attn.c_attn.weight[:, : 2 * d] = 0.0
                attn.c_attn.bias[: 2 * d] = 0.0


def _no_mlp(loaded) -> None:
    with torch.no_grad():
        for block in loaded.adapter.blocks(loaded.model):
            out = block.mlp.down_proj if loaded.family == "qwen2" else block.mlp.c_proj
            out.weight.zero_()
            if getattr(out, "bias", None) is not None:
                out.bias.zero_()


@pytest.mark.parametrize("spec", SPECS)
def test_gains_equal_dense_jacobians_from_the_weights(spec) -> None:
    """Real (non-uniform, positional) attention: per-position gains are the value path."""
    loaded = load_model(spec, dtype="float64", seed=3)
    ids = random_token_ids(256, 2, 6, seed=1)
    got = branch_gains(loaded, ids, exact=True)
    xs, attn_out = _block_inputs_and_attention(loaded, ids)
    d, (samples, length) = loaded.hidden_size, ids.shape
    for index, block in enumerate(loaded.adapter.blocks(loaded.model)):
        attn_sq, mlp_sq = np.zeros(length), np.zeros(length)
        cosines = np.zeros(length)
        for s in range(samples):
            y = xs[index][s] + attn_out[index][s]  # (L, d) the real stream before the MLP
            value_path = partial(_value_path, loaded, block)
            mlp_branch = partial(_mlp_branch, loaded, block)
            jv = [torch.func.jacrev(value_path)(xs[index][s, j]) for j in range(length)]
            jm = [torch.func.jacrev(mlp_branch)(y[j]) for j in range(length)]
            attn_sq += [float(j.pow(2).sum()) for j in jv]
            mlp_sq += [float(j.pow(2).sum()) for j in jm]
            for i in range(length):
                cosines[i] += np.mean(
                    [
                        float((jm[i] * jm[j]).sum() / (jm[i].norm() * jm[j].norm()))
                        for j in range(length)
                        if j != i
                    ]
                )
        # Qwen2RMSNorm computes in float32 even in a float64 model (rel. error ~1e-8).
        rtol = 1e-6 if loaded.family == "qwen2" else 1e-10
        np.testing.assert_allclose(got.per_position[index], np.sqrt(attn_sq / samples / d), rtol)
        np.testing.assert_allclose(
            got.mlp_gain_per_position[index], np.sqrt(mlp_sq / samples / d), rtol
        )
        np.testing.assert_allclose(
            got.mlp_coherence_per_position[index], cosines / samples, rtol=rtol, atol=1e-9
        )
    np.testing.assert_allclose(got.gain, got.per_position.mean(1), rtol=1e-14)
    np.testing.assert_allclose(got.residual_strength, got.gain / (1 + got.gain), rtol=1e-14)


@pytest.mark.parametrize("spec", SPECS)
def test_uniform_attention_gain_times_t_is_the_real_causal_jacobian(spec) -> None:
    """With W_Q = W_K = 0, d a_t / d x_j = J_j / t exactly: t ||.||_F / sqrt(d) = s(j)."""
    loaded = load_model(spec, dtype="float64", seed=0, attn_implementation="eager")
    _uniform_attention(loaded)
    ids = random_token_ids(256, 1, 7, seed=2)
    got = branch_gains(loaded, ids, exact=True).per_position[0]
    x0 = loaded.adapter.token_embedding(loaded.model)(ids).detach()  # (1, L, d)
    attention = loaded.adapter.attention(loaded.adapter.blocks(loaded.model)[0])
    d, length = loaded.hidden_size, ids.shape[1]
    kept = {}
    handle = attention.register_forward_hook(lambda m, a, o: kept.update(a=o[0]))

    def branch_at(x: torch.Tensor, t: int) -> torch.Tensor:
        loaded.adapter.base(loaded.model)(inputs_embeds=x, use_cache=False)
        return kept["a"][0, t - 1]  # (d,) the causal attention output at position t

    for t in (length, 4):
        jac = torch.func.jacrev(partial(branch_at, t=t))(x0)[:, 0]  # (d, L, d)
        norms = jac.pow(2).sum(dim=(0, 2)).sqrt().numpy()  # (L,)
        rtol = 1e-6 if loaded.family == "qwen2" else 1e-10  # float32 RMSNorm in qwen2
        np.testing.assert_allclose(t * norms[:t] / np.sqrt(d), got[:t], rtol=rtol)
        assert np.all(norms[t:] == 0)
    handle.remove()


@pytest.mark.parametrize(("spec", "no_pos_emb"), [("tiny-qwen2", False), ("tiny-gpt2", True)])
def test_depth_one_profile_is_the_jacobian_kernel_with_a_from_the_gain(spec, no_pos_emb) -> None:
    """One layer, uniform attention, no MLP: the exact theory holds for a = s/(1+s)."""
    loaded = load_model(
        spec, dtype="float64", no_pos_emb=no_pos_emb, config_overrides={"num_hidden_layers": 1}
    )
    _uniform_attention(loaded)
    _no_mlp(loaded)
    length = 64
    ids = random_token_ids(256, 8, length, seed=0)
    measured = influence_profile(loaded, ids, exact=True, output="residual").influence
    a = float(branch_gains(loaded, ids, exact=True).residual_strength[0])
    theory = influence_row(length, 1, a, kernel="jacobian")
    # W1 0.00033 (qwen2) / 0.00062 (gpt2, no position embeddings): the rest is the
    # sample-to-sample spread of s(j) over positions with 8 samples.
    assert wasserstein1(measured, theory) < 1e-3

    def spike_over_rest(row: np.ndarray) -> float:
        return float(row[-1] / row[:-1].mean())

    assert spike_over_rest(measured) == pytest.approx(spike_over_rest(theory), rel=2e-3)
    assert spike_over_rest(measured) == pytest.approx(length * (1 - a) / a, rel=2e-3)
    # The peer's forward ratio: a far too weak branch, a spike several times too tall.
    a_forward = float(residual_strength(loaded, ids, method="forward")[0])
    forward = influence_row(length, 1, a_forward, kernel="jacobian")
    assert spike_over_rest(forward) > 3 * spike_over_rest(measured)
    assert wasserstein1(measured, forward) > 50 * wasserstein1(measured, theory)


def test_self_only_mask_makes_each_gain_local() -> None:
    """Changing the token at one position changes layer-1 gains there and nowhere else."""
    loaded = load_model("tiny-qwen2", dtype="float64")
    ids = random_token_ids(256, 1, 9, seed=4)
    other = ids.clone()
    other[0, 3] = (other[0, 3] + 17) % 256
    before = branch_gains(loaded, ids, exact=True).per_position[0]
    after = branch_gains(loaded, other, exact=True).per_position[0]
    changed = np.flatnonzero(~np.isclose(before, after, rtol=1e-12, atol=0))
    assert changed.tolist() == [3]


@pytest.mark.parametrize("spec", SPECS)
def test_random_directions_agree_with_the_basis_and_across_seeds(spec) -> None:
    loaded = load_model(spec, dtype="float64")
    ids = random_token_ids(256, 4, 16, seed=5)
    exact = branch_gains(loaded, ids, exact=True)
    one = branch_gains(loaded, ids, directions=8, seed=0)
    two = branch_gains(loaded, ids, directions=8, seed=1)
    # Per position ||J^T v||^2 has relative sd <= sqrt(2/(P d)) = 0.088 per sample; the
    # mean over 16 positions and 4 samples is within ~1.1% (1 sd) for the squared gain.
    for mc in (one, two):
        np.testing.assert_allclose(mc.gain, exact.gain, rtol=0.03)
        np.testing.assert_allclose(mc.mlp_gain, exact.mlp_gain, rtol=0.05)
        np.testing.assert_allclose(mc.mlp_coherence, exact.mlp_coherence, atol=0.06)
    assert not np.allclose(one.gain, two.gain, rtol=1e-9)  # the seed does draw directions
    again = branch_gains(loaded, ids, directions=8, seed=0)
    np.testing.assert_array_equal(again.per_position, one.per_position)


def test_batching_and_per_position_flag_do_not_change_the_numbers() -> None:
    loaded = load_model("tiny-gpt2", dtype="float64")
    ids = random_token_ids(256, 3, 10, seed=6)
    single = branch_gains(loaded, ids, exact=True)
    batched = branch_gains(loaded, ids, exact=True, batch_size=3, per_position=False)
    np.testing.assert_allclose(batched.gain, single.gain, rtol=1e-12)
    np.testing.assert_allclose(batched.mlp_coherence, single.mlp_coherence, rtol=1e-10)
    assert batched.per_position is None and batched.mlp_gain_per_position is None
    record = batched.record()
    assert record["residual_strength_method"] == "jacobian"
    assert record["branch_gain"] == batched.gain.tolist() and record["gain_per_position"] is None


def test_zero_mlp_has_zero_gain_and_undefined_coherence() -> None:
    loaded = load_model("tiny-qwen2", dtype="float64")
    _no_mlp(loaded)
    got = branch_gains(loaded, random_token_ids(256, 1, 5, seed=0), directions=2)
    np.testing.assert_array_equal(got.mlp_gain, 0.0)
    assert np.isnan(got.mlp_coherence).all() and np.all(got.gain > 0)


def test_record_is_json_ready() -> None:
    import json

    got = branch_gains(load_model("tiny-gpt2"), random_token_ids(256, 1, 4, seed=0))
    assert isinstance(got, BranchGains)
    back = json.loads(json.dumps(got.record()))
    assert np.array(back["gain_per_position"]).shape == (2, 4)
    assert back["directions"] == 4 and back["exact"] is False


def test_bad_input_says_what_to_do(unknown_family_dir) -> None:
    loaded = load_model("tiny-gpt2")
    ids = random_token_ids(256, 1, 8, seed=0)
    with pytest.raises(UserError, match="directions must be positive, got 0"):
        branch_gains(loaded, ids, directions=0)
    with pytest.raises(UserError, match="batch size must be positive"):
        branch_gains(loaded, ids, batch_size=0)
    with pytest.raises(UserError, match=r"\(samples, length\) tensor"):
        branch_gains(loaded, ids[0])
    with pytest.raises(UserError, match="exceeds the maximum 128"):
        branch_gains(loaded, random_token_ids(256, 1, 129, seed=0))
    with pytest.raises(UserError, match=r"token ids must lie in 0\.\.255"):
        branch_gains(loaded, ids + 300)
    with pytest.raises(UserError, match="needs a family adapter"):
        branch_gains(load_model(str(unknown_family_dir)), random_token_ids(64, 1, 8, seed=0))


def test_non_finite_weights_name_the_layer() -> None:
    loaded = load_model("tiny-gpt2")
    with torch.no_grad():
        loaded.adapter.blocks(loaded.model)[1].attn.c_attn.weight[0, -1] = float("nan")
    with pytest.raises(NonFiniteError, match="layer 2 of 2"):
        branch_gains(loaded, random_token_ids(256, 1, 8, seed=0))


def _first_block_place(loaded, place, x: torch.Tensor, t: int) -> torch.Tensor:
    """The output of ``place`` (a module of block 1) at position t when block 1's input is
    ``x`` (1, L, d): the model runs with that input swapped in (a pre-hook)."""
    block = loaded.adapter.blocks(loaded.model)[0]
    kept = {}

    def swap_in(module, args, kwargs):
        if args:
            return (x, *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": x}

    def keep(module, args, output):
        out = output[0] if isinstance(output, tuple) else output
        kept["out"] = out.reshape(x.shape)  # OPT's MLP runs on (B L, d)

    handles = [
        block.register_forward_pre_hook(swap_in, with_kwargs=True),
        place.register_forward_hook(keep),
    ]
    try:
        ids = torch.zeros(1, x.shape[1], dtype=torch.long)
        loaded.adapter.base(loaded.model)(
            inputs_embeds=loaded.adapter.token_embedding(loaded.model)(ids), use_cache=False
        )
    finally:
        for handle in handles:
            handle.remove()
    return kept["out"][0, t - 1]  # (d,)


# Gemma2 is left out: its branch post-norm acts on the attention average, so the
# causal Jacobian is not A_tj times the self-only one (no "gain per unit weight").
FAMILIES = ["tiny-gpt2", "tiny-llama", "tiny-bloom", "tiny-neox", "tiny-opt", "tiny-phi"]


@pytest.mark.parametrize("spec", FAMILIES)
def test_every_family_gain_is_its_uniform_attention_jacobian(spec) -> None:
    """Through the adapter places, per family: with q.k = 0 the branch output a_t has
    d a_t / d x_j = J_j / t (so t ||.||_F / sqrt(d) = s(j)), and in parallel blocks the
    MLP output m_t has d m_t / d x_t = K_t (its gain), from jacrev of the real model."""
    from lostmid.models import uniform_attention

    loaded = load_model(spec, dtype="float64", seed=1, attn_implementation="eager")
    uniform_attention(loaded)
    ids = random_token_ids(loaded.vocab_size, 1, 6, seed=2)
    got = branch_gains(loaded, ids, exact=True)
    kept = {}
    block = loaded.adapter.blocks(loaded.model)[0]
    handle = block.register_forward_pre_hook(
        lambda m, a, k: kept.update(x=(a[0] if a else k["hidden_states"]).detach()),
        with_kwargs=True,
    )
    with torch.no_grad():
        loaded.adapter.base(loaded.model)(
            inputs_embeds=loaded.adapter.token_embedding(loaded.model)(ids), use_cache=False
        )
    handle.remove()
    x = kept["x"]  # (1, L, d) the real input of block 1
    d, length = loaded.hidden_size, ids.shape[1]
    t = length
    place = loaded.adapter.attention_out(block)
    # autograd's dense Jacobian (BLOOM's custom GeLU Function rules out torch.func)
    jacobian = torch.autograd.functional.jacobian
    jac = jacobian(partial(_first_block_place, loaded, place, t=t), x)[:, 0]  # (d, L, d)
    norms = jac.pow(2).sum(dim=(0, 2)).sqrt().numpy()  # (L,)
    np.testing.assert_allclose(t * norms / np.sqrt(d), got.per_position[0], rtol=1e-6)
    if loaded.adapter.parallel_residual(block):
        mlp_out = loaded.adapter.mlp_out(block)
        jac = jacobian(partial(_first_block_place, loaded, mlp_out, t=t), x)[:, 0]
        norms = jac.pow(2).sum(dim=(0, 2)).sqrt().numpy()
        assert np.all(norms[: t - 1] == 0)
        np.testing.assert_allclose(
            norms[t - 1] / np.sqrt(d), got.mlp_gain_per_position[0, t - 1], rtol=1e-6
        )


ALL_TINY = [*FAMILIES, "tiny-qwen2", "tiny-mistral", "tiny-gemma2", "tiny-gemma3"]


@pytest.mark.parametrize("spec", ALL_TINY)
def test_the_values_kernel_gives_the_self_only_mask_s_gains(spec, monkeypatch) -> None:
    """Where a family reads transformers' attention function the gains' block passes
    return the values themselves (no L x L scores); the numbers are the mask's, which
    runs when the kernel is off (and for BLOOM, whose attention is its own)."""
    from transformers import AttentionInterface

    from lostmid.influence import gain_passes
    from lostmid.models.attention import SELF_ONLY, self_only_available, self_only_forward

    assert self_only_available()  # registered before the spy replaces it
    loaded = load_model(spec, dtype="float64", seed=2)
    ids = random_token_ids(loaded.vocab_size, 2, 7, seed=3)
    calls = []

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        return self_only_forward(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setitem(AttentionInterface._global_mapping, SELF_ONLY, counted)
        fast = branch_gains(loaded, ids, directions=3, seed=4)
    assert len(calls) == (0 if spec == "tiny-bloom" else loaded.num_layers * 2)  # 2 samples
    monkeypatch.setattr(gain_passes, "self_only_available", lambda: False)
    masked = branch_gains(loaded, ids, directions=3, seed=4)
    for name in ("per_position", "mlp_gain_per_position", "mlp_coherence_per_position"):
        np.testing.assert_allclose(getattr(fast, name), getattr(masked, name), rtol=1e-10)
