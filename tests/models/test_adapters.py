"""Adapters: every place of the vocabulary is the right module, for every family.

Each check runs the real Hugging Face forward with hooks and compares what the
adapter's places saw against the block equations of ``adapters/base.py``:
serial h = x + a, out = h + m; parallel out = x + a + m.
"""

from __future__ import annotations

import pytest
import torch

from lostmid.errors import UserError
from lostmid.models import MODEL_PRESETS, adapter_for_model, load_model, remove_positions
from lostmid.theory.masks import parse_mask

TINY = sorted(name for name in MODEL_PRESETS if name.startswith("tiny-"))
ADAPTER_OF = {
    "tiny-bloom": "bloom",
    "tiny-gemma2": "gemma2",
    "tiny-gemma3": "gemma3",
    "tiny-gpt2": "gpt2",
    "tiny-llama": "llama-style",
    "tiny-mistral": "llama-style",
    "tiny-neox": "gpt-neox",
    "tiny-opt": "opt",
    "tiny-phi": "phi",
    "tiny-qwen2": "llama-style",
}
PARALLEL = {"tiny-neox", "tiny-phi"}  # out = x + a + m
ATTENTION_ADDS_RESIDUAL = {"tiny-bloom"}  # BloomAttention returns x + a itself


def _load(name: str, **kwargs):
    return load_model(name, seed=0, dtype="float64", attn_implementation="eager", **kwargs)


def _first(value):
    return value[0] if isinstance(value, tuple) else value


def _run_with_hooks(loaded, ids: torch.Tensor, block_index: int = 0) -> dict[str, torch.Tensor]:
    """What each place of one block saw on a forward pass of ``ids``."""
    adapter, block = loaded.adapter, loaded.adapter.blocks(loaded.model)[block_index]
    seen: dict[str, torch.Tensor] = {}

    def keep(name: str):
        def hook(module, args, kwargs, output) -> None:
            seen[name + "_in"] = args[0] if args else kwargs["hidden_states"]
            seen[name + "_out"] = _first(output)

        return hook

    places = {
        "block": block,
        "attention_norm": adapter.attention_norm(block),
        "attention": adapter.attention(block),
        "attention_out": adapter.attention_out(block),
        "mlp_out": adapter.mlp_out(block),
    }
    if adapter.mlp_norm(block) is not None:
        places["mlp_norm"] = adapter.mlp_norm(block)
    handles = [m.register_forward_hook(keep(k), with_kwargs=True) for k, m in places.items()]
    try:
        embed = adapter.token_embedding(loaded.model)
        with torch.no_grad():
            adapter.base(loaded.model)(inputs_embeds=embed(ids), use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def _ids(length: int = 12, batch: int = 2, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(3, 256, (batch, length), generator=gen)  # (B, L)


@pytest.mark.parametrize("name", TINY)
def test_every_place_is_the_module_the_block_equations_name(name: str) -> None:
    loaded = _load(name)
    adapter = loaded.adapter
    assert adapter.name == ADAPTER_OF[name]
    block = adapter.blocks(loaded.model)[1]
    seen = _run_with_hooks(loaded, _ids(), block_index=1)
    x, out = seen["block_in"], seen["block_out"]  # (B, L, d)
    shape = x.shape
    a, m = seen["attention_out_out"], seen["mlp_out_out"].reshape(shape)  # OPT: (B L, d)

    # The norm before attention reads the block input and feeds the attention.
    assert torch.equal(seen["attention_norm_in"], x)
    assert torch.equal(seen["attention_in"], seen["attention_norm_out"])
    # The branches: out = x + a + m in both forms of the block.
    assert torch.allclose(out, x + a + m, rtol=0, atol=1e-12)
    assert a.abs().max() > 1e-3 and m.abs().max() > 1e-3
    # The attention module's own output is the branch before any post-norm.
    attn_out = seen["attention_out"]
    if name in ATTENTION_ADDS_RESIDUAL:
        assert torch.allclose(attn_out, x + a, rtol=0, atol=1e-12)
    else:
        post_a = adapter.attention_post_norm(block)
        expected = attn_out if post_a is None else post_a(attn_out)
        assert torch.equal(expected, a)
    # The MLP reads the stream after attention (serial) or the block input (parallel).
    assert adapter.parallel_residual(block) is (name in PARALLEL)
    if adapter.mlp_norm(block) is None:
        assert name == "tiny-phi"  # one norm shared by both branches
        h = seen["attention_norm_out"]
    else:
        stream = x if name in PARALLEL else x + a
        mlp_in = seen["mlp_norm_in"].reshape(shape)  # OPT flattens (B L, d)
        assert torch.allclose(mlp_in, stream, rtol=0, atol=1e-12)
        h = seen["mlp_norm_out"].reshape(shape)
    with torch.no_grad():
        branch = adapter.mlp(block)(h)
    post_m = adapter.mlp_post_norm(block)
    assert torch.equal((branch if post_m is None else post_m(branch)).reshape(shape), m)


@pytest.mark.parametrize("name", TINY)
def test_final_norm_reads_the_last_block_output(name: str) -> None:
    loaded = _load(name)
    adapter, ids = loaded.adapter, _ids()
    seen = {}
    last = adapter.blocks(loaded.model)[-1]
    handles = [
        last.register_forward_hook(lambda m, a, o: seen.update(block=_first(o))),
        adapter.final_norm(loaded.model).register_forward_hook(
            lambda m, a, o: seen.update(norm_in=a[0], norm_out=o)
        ),
    ]
    with torch.no_grad():
        hidden = adapter.base(loaded.model)(input_ids=ids, use_cache=False).last_hidden_state
    for handle in handles:
        handle.remove()
    assert torch.equal(seen["norm_in"], seen["block"])
    assert torch.equal(seen["norm_out"], hidden)


@pytest.mark.parametrize("name", TINY)
def test_lm_head_of_the_final_hidden_state_gives_the_model_logits(name: str) -> None:
    loaded = _load(name)
    ids = _ids()
    with torch.no_grad():
        hidden = loaded.adapter.base(loaded.model)(input_ids=ids, use_cache=False)
        logits = loaded.adapter.lm_head(loaded.model)(hidden.last_hidden_state)
        expected = loaded.model(input_ids=ids, use_cache=False).logits
    assert torch.allclose(logits, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", TINY)
def test_outputs_are_causal(name: str) -> None:
    loaded = _load(name)
    ids = _ids(length=10, batch=1)
    changed = ids.clone()
    changed[0, 6] = (ids[0, 6] + 7) % 250 + 3
    with torch.no_grad():
        base = loaded.adapter.base(loaded.model)
        before = base(input_ids=ids, use_cache=False).last_hidden_state[0]
        after = base(input_ids=changed, use_cache=False).last_hidden_state[0]
    assert torch.equal(before[:6], after[:6])
    assert not torch.allclose(before[6:], after[6:])


def _layer_one_weights(loaded, x: torch.Tensor) -> torch.Tensor:
    """Attention probabilities of layer 1 (B, heads, L, L) for input embeddings x."""
    kept = {}
    attn = loaded.adapter.attention(loaded.adapter.blocks(loaded.model)[0])
    handle = attn.register_forward_hook(lambda m, a, o: kept.update(w=o[1]))
    try:
        with torch.no_grad():
            loaded.adapter.base(loaded.model)(inputs_embeds=x, use_cache=False)
    finally:
        handle.remove()
    return kept["w"]


def _sharpen_query_key(loaded, factor: float = 20.0) -> None:
    """Scale W_Q and W_K so position effects on q.k are far above rounding."""
    with torch.no_grad():
        for block in loaded.adapter.blocks(loaded.model):
            for tensor in loaded.adapter.query_key(block):
                tensor.mul_(factor)


@pytest.mark.parametrize("name", TINY)
def test_position_switch_makes_equal_inputs_attend_uniformly(name: str) -> None:
    """Equal inputs at every position: only the positional encoding can make the
    scores differ, so without it each row is uniform under the layer-1 mask."""
    length = 24  # beyond the sliding windows (W = 16) of tiny-mistral and tiny-gemma2
    weights, spec = {}, ""
    for switch in (False, True):
        loaded = _load(name)
        _sharpen_query_key(loaded)
        if switch:
            assert remove_positions(loaded).startswith("positions removed")
        ids = torch.full((1, length), 5)
        x = loaded.adapter.token_embedding(loaded.model)(ids)  # (1, L, d)
        weights[switch] = _layer_one_weights(loaded, x)[0]  # (heads, L, L)
        spec = loaded.adapter.layer_masks(loaded.model.config, length)[0]
    mask = torch.from_numpy(parse_mask(spec).dense(length))  # (L, L) rows sum to 1
    assert torch.allclose(weights[True], mask.expand_as(weights[True]), rtol=0, atol=1e-6)
    assert (weights[False] - mask).abs().max() > 1e-3


def test_layer_masks_follow_the_config() -> None:
    gemma = _load("tiny-gemma2")
    assert gemma.adapter.layer_masks(gemma.model.config, 64) == ["sliding:16", "causal"]
    assert gemma.adapter.layer_masks(gemma.model.config, 16) == ["causal", "causal"]
    deeper = _load("tiny-gemma2", config_overrides={"num_hidden_layers": 4})
    assert deeper.adapter.layer_masks(deeper.model.config, 32) == ["sliding:16", "causal"] * 2
    gemma3 = _load("tiny-gemma3")  # its sliding layer and its global layer, as the config says
    assert gemma3.adapter.layer_masks(gemma3.model.config, 64) == ["sliding:16", "causal"]
    deeper3 = _load("tiny-gemma3", config_overrides={"num_hidden_layers": 12})
    expected = (["sliding:16"] * 5 + ["causal"]) * 2  # Gemma 3: every sixth layer global
    assert deeper3.adapter.layer_masks(deeper3.model.config, 64) == expected
    mistral = _load("tiny-mistral", config_overrides={"sliding_window": 5})
    assert mistral.adapter.layer_masks(mistral.model.config, 32) == ["sliding:5", "sliding:5"]
    for name in ("tiny-qwen2", "tiny-gpt2", "tiny-bloom", "tiny-neox", "tiny-opt", "tiny-phi"):
        loaded = _load(name)
        assert loaded.adapter.layer_masks(loaded.model.config, 64) == ["causal", "causal"]


def test_gemma3_keeps_two_rope_bases_one_per_layer_type() -> None:
    gemma3 = _load("tiny-gemma3")
    assert gemma3.rope_bases() == [10000.0, 1000000.0]
    assert gemma3.describe()["rope_bases"] == [10000.0, 1000000.0]
    deeper = _load("tiny-gemma3", config_overrides={"num_hidden_layers": 6})
    assert deeper.rope_bases() == [10000.0] * 5 + [1000000.0]
    assert _load("tiny-qwen2").rope_bases() == [10000.0, 10000.0]
    assert _load("tiny-gpt2").rope_bases() is None


def test_removing_what_the_architecture_lacks_is_an_error() -> None:
    with pytest.raises(UserError, match="gpt2 has no rotary embeddings.*use --no-pos-emb"):
        load_model("tiny-gpt2", no_rope=True)
    with pytest.raises(UserError, match="qwen2 has no learned position embeddings.*use --no-rope"):
        load_model("tiny-qwen2", no_pos_emb=True)
    with pytest.raises(UserError, match="bloom has no rotary embeddings.*use --no-alibi"):
        load_model("tiny-bloom", no_rope=True)
    with pytest.raises(UserError, match="phi has no ALiBi biases.*use --no-rope instead"):
        load_model("tiny-phi", no_alibi=True)
    with pytest.raises(UserError, match="opt has no ALiBi biases.*use --no-pos-emb instead"):
        load_model("tiny-opt", no_alibi=True)


def test_unknown_family_uses_the_generic_adapter(unknown_family_dir) -> None:
    loaded = load_model(str(unknown_family_dir))
    assert loaded.adapter.name == "generic"
    with pytest.raises(
        UserError,
        match="--no-rope needs a family adapter and model type 'gptj' has none "
        r"\(closest layout, gpt2, finds no transformer.wpe\)",
    ):
        load_model(str(unknown_family_dir), no_rope=True)
    with pytest.raises(UserError, match="per-layer profiles.*needs a family adapter"):
        loaded.adapter.blocks(loaded.model)


def test_discovery_places_an_unnamed_llama_style_family(tmp_path) -> None:
    """OLMo has Llama's module names and block equations but no adapter names it."""
    import json

    from transformers import AutoConfig

    config = AutoConfig.for_model(
        "olmo",
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=0,
        eos_token_id=0,
    )
    (tmp_path / "config.json").write_text(json.dumps(config.to_dict()))
    loaded = load_model(str(tmp_path), dtype="float64", attn_implementation="eager")
    assert (loaded.family, loaded.adapter.name) == ("olmo", "llama-style")
    seen = _run_with_hooks(loaded, _ids() % 64)
    a, m = seen["attention_out_out"], seen["mlp_out_out"]
    assert torch.allclose(seen["block_out"], seen["block_in"] + a + m, rtol=0, atol=1e-12)


def test_discovery_rejects_a_block_that_breaks_the_residual_equation() -> None:
    model = load_model("tiny-qwen2").model
    model.config.model_type = "mystery"
    block = model.model.layers[0]
    block.register_forward_hook(lambda m, a, o: 2 * _first(o))  # out = 2 (x + a + m)
    adapter = adapter_for_model(model)
    assert adapter.name == "generic"
    with pytest.raises(UserError, match="closest layout, llama-style, finds no block output"):
        adapter.blocks(model)


def test_variants_the_layouts_do_not_describe_fall_back_to_generic() -> None:
    post_norm = load_model("tiny-opt", config_overrides={"do_layer_norm_before": False})
    assert post_norm.adapter.name == "generic"
    with pytest.raises(UserError, match="do_layer_norm_before=False \\(post-norm"):
        post_norm.adapter.attention_norm(post_norm.model.model.decoder.layers[0])
