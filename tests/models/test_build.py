"""Building models from a shape, the device resolver, and wrapping a built module."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.models import (
    BUILDABLE_FAMILIES,
    LoadedModel,
    ModelShape,
    adapter_for,
    adapter_for_model,
    build_causal_lm,
    build_config,
    load_model,
    resolve_device,
)

SHAPE = ModelShape(
    layers=3, hidden=32, heads=4, kv_heads=2, intermediate=128, context=64, vocab_size=300,
    tie_embeddings=False,
)  # fmt: skip


@pytest.mark.parametrize("family", BUILDABLE_FAMILIES)
def test_every_family_builds_the_shape_it_was_asked_for(family: str) -> None:
    model = build_causal_lm(build_config(family, SHAPE), seed=0)
    adapter = adapter_for_model(model)
    assert adapter.name == adapter_for(family).name  # the family's own layout fits
    blocks = adapter.blocks(model)
    embed = adapter.token_embedding(model)
    assert len(blocks) == 3
    assert tuple(embed.weight.shape) == (300, 32)
    assert adapter.lm_head(model).weight is not embed.weight  # tie_embeddings=False
    assert all(m.p == 0.0 for m in model.modules() if isinstance(m, nn.Dropout))
    loaded = LoadedModel.from_module(model, spec="built", init="random", seed=0, source="test")
    assert loaded.max_length == (1 << 30 if family == "bloom" else 64)  # ALiBi: no table
    with torch.no_grad():
        logits = model(input_ids=torch.arange(10)[None], use_cache=False).logits
    assert logits.shape == (1, 10, 300)


def test_grouped_query_families_get_their_kv_heads() -> None:
    for family in ("qwen2", "llama", "mistral", "phi", "gemma2"):
        model = build_causal_lm(build_config(family, SHAPE), seed=0)
        attn = adapter_for(family).attention(adapter_for(family).blocks(model)[0])
        assert attn.k_proj.out_features == 2 * 8, family  # kv_heads x head_dim


def test_the_seed_fixes_the_weights_and_leaves_the_global_generator_alone() -> None:
    config = build_config("qwen2", SHAPE)
    state = torch.random.get_rng_state()
    first, again, other = (build_causal_lm(config, seed=s) for s in (3, 3, 4))
    assert torch.equal(torch.random.get_rng_state(), state)
    w = "model.layers.1.mlp.up_proj.weight"
    assert torch.equal(first.state_dict()[w], again.state_dict()[w])
    assert not torch.equal(first.state_dict()[w], other.state_dict()[w])


def test_load_model_builds_what_build_causal_lm_builds() -> None:
    loaded = load_model("tiny-opt", seed=5)
    direct = build_causal_lm(loaded.model.config, seed=5)
    for key, value in direct.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[key], value), key


def test_bad_shapes_and_families_are_one_line_errors() -> None:
    with pytest.raises(UserError, match="unknown model family 'gptj'; choose one of .*gpt_neox"):
        build_config("gptj", SHAPE)
    with pytest.raises(UserError, match=r"model.hidden \(30\) must be divisible by model.heads"):
        build_config("gpt2", ModelShape(layers=1, hidden=30, heads=4))
    with pytest.raises(UserError, match="bloom's MLP width is 4 x hidden = 128"):
        build_config("bloom", ModelShape(layers=1, hidden=32, heads=4, intermediate=64))


def test_families_without_sdpa_run_eager_and_say_so() -> None:
    for name, expected in (
        ("tiny-bloom", "eager"),
        ("tiny-gemma2", "eager"),
        ("tiny-gpt2", "sdpa"),
    ):
        loaded = load_model(name, attn_implementation="sdpa")
        assert loaded.attention == expected == loaded.model.config._attn_implementation
        assert loaded.describe()["attention"] == expected


def test_from_module_shares_the_module_and_reads_its_facts() -> None:
    model = build_causal_lm(build_config("gpt_neox", SHAPE), seed=0, dtype="float64")
    loaded = LoadedModel.from_module(
        model, spec="mine", init="trained", seed=7, source="training", no_rope=True
    )
    assert loaded.model is model
    assert (loaded.family, loaded.num_layers, loaded.hidden_size, loaded.vocab_size) == (
        "gpt_neox",
        3,
        32,
        300,
    )
    assert (loaded.dtype, loaded.device, loaded.seed, loaded.no_rope) == (
        "float64",
        "cpu",
        7,
        True,
    )


def test_resolve_device() -> None:
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(UserError, match="--device 'tpu' is not a device; use auto, cpu or cuda"):
        resolve_device("tpu")
    with pytest.raises(UserError, match="--device 'meta' is not supported"):
        resolve_device("meta")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="CUDA is not available on this machine"):
            resolve_device("cuda:0")
    else:
        with pytest.raises(UserError, match="only .* GPU\\(s\\) here"):
            resolve_device("cuda:99")


def test_training_builds_its_models_through_models() -> None:
    from lostmid.train.config import ModelSpec
    from lostmid.train.model import as_loaded, build_model, hf_config

    spec = ModelSpec(family="gpt2", layers=2, hidden=32, heads=4, intermediate=48, context=16)
    config = hf_config(spec)
    assert (config.n_layer, config.n_embd, config.n_inner, config.n_positions) == (2, 32, 48, 16)
    model = build_model(spec, seed=1)
    assert model.transformer.h[0].mlp.c_fc.weight.shape == (32, 48)  # Conv1D: (in, out)
    loaded = as_loaded(model, seed=1)
    assert loaded.model is model and loaded.adapter.name == "gpt2"
    assert (loaded.init, loaded.source, loaded.max_length) == ("trained", "training", 16)


@pytest.mark.parametrize("dtype", ["float64", "bfloat16", "float16"])
def test_the_same_seed_gives_the_same_weights_in_every_dtype(dtype: str) -> None:
    # drawn in float32 then cast: a dtype comparison compares one model, not two (a
    # float64 or bfloat16 draw takes another stream on some torch builds)
    config = build_config("qwen2", SHAPE)
    reference = build_causal_lm(config, seed=5)
    other = build_causal_lm(config, seed=5, dtype=dtype)
    target = getattr(torch, dtype)
    for (name, a), (_, b) in zip(
        reference.state_dict().items(), other.state_dict().items(), strict=True
    ):
        assert b.dtype == target, name
        assert torch.equal(a.to(target), b), name


@pytest.mark.parametrize("family", BUILDABLE_FAMILIES)
def test_a_bfloat16_build_keeps_the_buffers_a_direct_build_has(family: str) -> None:
    # the weights are drawn in float32 and cast; the buffers (rotary frequencies, masks)
    # keep the dtypes transformers gives them in a bfloat16 build
    from transformers import AutoModelForCausalLM

    config = build_config(family, SHAPE)
    ours = build_causal_lm(config, seed=0, dtype="bfloat16", attention="eager")
    direct = AutoModelForCausalLM.from_config(
        config, dtype=torch.bfloat16, attn_implementation="eager"
    )
    assert {n: b.dtype for n, b in ours.named_buffers()} == {
        n: b.dtype for n, b in direct.named_buffers()
    }
    assert {n: p.dtype for n, p in ours.named_parameters()} == {
        n: p.dtype for n, p in direct.named_parameters()
    }
