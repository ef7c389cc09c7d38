"""Ablation switches: each does exactly what its rung of the ladder claims, every family."""

from __future__ import annotations

import pytest
import torch

from lostmid.errors import UserError
from lostmid.models import (
    MODEL_PRESETS,
    freeze_norm_scale,
    load_model,
    remove_mlp,
    scale_embeddings,
    uniform_attention,
)
from lostmid.models.ablations import FrozenScaleNorm
from lostmid.theory.masks import parse_mask

TINY = sorted(name for name in MODEL_PRESETS if name.startswith("tiny-"))


def _load(name: str, **kwargs):
    return load_model(name, seed=0, dtype="float64", attn_implementation="eager", **kwargs)


def _ids(length: int = 24, batch: int = 2, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(3, 256, (batch, length), generator=gen)  # (B, L)


def _first(value):
    return value[0] if isinstance(value, tuple) else value


def _attention_weights(loaded, ids: torch.Tensor) -> list[torch.Tensor]:
    """Each layer's attention probabilities (B, heads, L, L)."""
    kept: list[torch.Tensor] = []
    blocks = loaded.adapter.blocks(loaded.model)
    handles = [
        loaded.adapter.attention(b).register_forward_hook(lambda m, a, o: kept.append(o[1]))
        for b in blocks
    ]
    with torch.no_grad():
        loaded.adapter.base(loaded.model)(input_ids=ids, use_cache=False)
    for handle in handles:
        handle.remove()
    return kept


@pytest.mark.parametrize("name", TINY)
def test_uniform_attention_is_uniform_under_each_layer_mask(name: str) -> None:
    loaded = _load(name)
    with torch.no_grad():  # large weights: without the ablation attention is far from uniform
        for block in loaded.adapter.blocks(loaded.model):
            for param in loaded.adapter.attention(block).parameters():
                param.mul_(5.0)
    ids = _ids()
    length = ids.shape[1]
    masks = loaded.adapter.layer_masks(loaded.model.config, length)
    before = _attention_weights(loaded, ids)
    text = uniform_attention(loaded)
    assert text.startswith("uniform attention: W_Q = W_K = 0 in 2 layers")
    assert ("ALiBi removed" in text) is (name == "tiny-bloom")
    after = _attention_weights(loaded, ids)
    for spec, w_before, w_after in zip(masks, before, after, strict=True):
        dense = torch.from_numpy(parse_mask(spec).dense(length))  # A[i, j] = 1/i or 1/min(i, W)
        assert (w_before - dense).abs().max() > 1e-2
        assert torch.allclose(w_after, dense.expand_as(w_after), rtol=0, atol=1e-6)


def _block_io(loaded, ids: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    """Per block: its input x, output, and attention branch a."""
    adapter = loaded.adapter
    seen: list[dict[str, torch.Tensor]] = []
    handles = []
    for block in adapter.blocks(loaded.model):
        record: dict[str, torch.Tensor] = {}
        seen.append(record)

        def keep_block(m, args, kwargs, out, record=record) -> None:
            record["x"] = args[0] if args else kwargs["hidden_states"]
            record["out"] = _first(out)

        handles.append(block.register_forward_hook(keep_block, with_kwargs=True))
        handles.append(
            adapter.attention_out(block).register_forward_hook(
                lambda m, a, o, record=record: record.update(a=_first(o))
            )
        )
    with torch.no_grad():
        adapter.base(loaded.model)(input_ids=ids, use_cache=False)
    for handle in handles:
        handle.remove()
    return seen


@pytest.mark.parametrize("name", TINY)
def test_remove_mlp_leaves_the_residual_plus_attention(name: str) -> None:
    loaded = _load(name)
    ids = _ids(length=10)
    for record in _block_io(loaded, ids):
        assert (record["out"] - record["x"] - record["a"]).abs().max() > 1e-3
    assert remove_mlp(loaded) == "no MLP: the MLP branch is 0 in 2 layers"
    for record in _block_io(loaded, ids):
        assert torch.equal(record["out"], record["x"] + record["a"])


def _norm_io(loaded, norm: torch.nn.Module, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    kept = {}
    handle = norm.register_forward_hook(lambda m, a, o: kept.update(x=a[0], y=o))
    with torch.no_grad():
        loaded.adapter.base(loaded.model)(input_ids=ids, use_cache=False)
    handle.remove()
    return kept["x"], kept["y"]


@pytest.mark.parametrize("name", TINY)
def test_freeze_norm_scale_makes_norms_linear_and_keeps_the_mean_gain(name: str) -> None:
    loaded = _load(name)
    adapter, ids = loaded.adapter, _ids(length=16)
    block = adapter.blocks(loaded.model)[1]
    places = {
        "attention_norm": lambda: adapter.attention_norm(block),
        "final_norm": lambda: adapter.final_norm(loaded.model),
    }
    calibration = {key: _norm_io(loaded, place(), ids) for key, place in places.items()}
    text = freeze_norm_scale(loaded, ids)
    assert text.endswith("norms use their mean 1/sigma over 2 x 16 positions")
    assert all(isinstance(n, FrozenScaleNorm) for n in adapter.norms(loaded.model))
    gen = torch.Generator().manual_seed(1)
    for key, place in places.items():
        frozen = place()
        assert isinstance(frozen, FrozenScaleNorm)
        x, y_original = calibration[key]  # (B, L, d) input and output before freezing
        with torch.no_grad():
            u, v = torch.randn(2, *x.shape, generator=gen, dtype=x.dtype)
            zero = frozen(torch.zeros_like(u))
            # Affine: f(u + 2 v) - f(0) = (f(u) - f(0)) + 2 (f(v) - f(0)).
            lhs = frozen(u + 2 * v) - zero
            rhs = (frozen(u) - zero) + 2 * (frozen(v) - zero)
            assert torch.allclose(lhs, rhs, rtol=0, atol=1e-10)
            y_frozen = frozen(x)
        # At the calibration input, position j is rescaled by c sigma_j with c the mean
        # of 1/sigma_j: the ratio is the same in every feature, and mean_j 1/ratio_j = 1.
        shift = zero[:1, :1]  # the bias b (0 for RMSNorm)
        ratio = (y_frozen - shift) / (y_original - shift)  # (B, L, d)
        per_position = ratio.median(dim=-1, keepdim=True).values
        assert torch.allclose(ratio, per_position.expand_as(ratio), rtol=1e-5, atol=0)
        assert (1.0 / per_position).mean().item() == pytest.approx(1.0, rel=1e-6)
        assert per_position.std() > 1e-3  # the gain really depended on position before


def test_freeze_norm_scale_rejects_a_norm_it_does_not_know() -> None:
    class OddNorm(torch.nn.Module):  # x / max|x|: not a LayerNorm or RMSNorm
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(32))
            self.eps = 1e-6

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.weight * x / x.abs().amax(-1, keepdim=True)

    loaded = load_model("tiny-qwen2")
    loaded.model.model.norm = OddNorm()
    with pytest.raises(UserError, match="cannot freeze OddNorm: it is neither a LayerNorm"):
        freeze_norm_scale(loaded, _ids(length=4))


def test_scale_embeddings_scales_the_table_and_keeps_a_tied_head() -> None:
    loaded = _load("tiny-gpt2")  # tied: wte is the LM head
    adapter, ids = loaded.adapter, _ids(length=32, batch=64)
    embed, head = adapter.token_embedding(loaded.model), adapter.lm_head(loaded.model)
    assert head.weight is embed.weight
    table, head_weight = embed.weight.clone(), head.weight.clone()
    norms = {}
    for factor in (1.0, 30.0):
        if factor != 1.0:
            assert scale_embeddings(loaded, factor) == "token embeddings scaled x30"
        last_block = adapter.blocks(loaded.model)[-1]
        handle = last_block.register_forward_hook(
            lambda m, a, o, f=factor: norms.update({f: _first(o).norm(dim=-1)})  # (B, L)
        )
        with torch.no_grad():
            adapter.base(loaded.model)(input_ids=ids, use_cache=False)
        handle.remove()
    assert torch.equal(adapter.token_embedding(loaded.model).weight, 30.0 * table)
    assert torch.equal(adapter.lm_head(loaded.model).weight, head_weight)

    def spread(n: torch.Tensor) -> float:
        """Relative spread over positions of the mean stream norm per position."""
        per_position = n.mean(dim=0)  # (L,)
        return float(per_position.std() / per_position.mean())

    assert spread(norms[30.0]) < 0.5 * spread(norms[1.0])
    with pytest.raises(UserError, match="embedding scale factor must be positive"):
        scale_embeddings(loaded, 0.0)


def test_a_global_twin_attends_beyond_the_window() -> None:
    """tiny-gemma3's first layer slides over 16 positions: in that layer alone, the last
    position cannot see the first; with every layer global it can (exact zero vs not)."""
    import torch

    from lostmid.models import load_model
    from lostmid.models.ablations import global_attention_overrides
    from lostmid.models.load import resolve_config

    overrides = global_attention_overrides(resolve_config("tiny-gemma3"))
    assert overrides == {"layer_types": ["full_attention", "full_attention"]}
    assert global_attention_overrides(resolve_config("tiny-qwen2")) is None
    one = {"num_hidden_layers": 1, "layer_types": ["sliding_attention"]}
    reach = {}
    for name, changes in (
        ("sliding", one),
        ("global", {**one, **overrides, "layer_types": ["full_attention"]}),
    ):
        model = load_model("tiny-gemma3", seed=0, dtype="float64", config_overrides=changes).model
        ids = torch.arange(40).unsqueeze(0) % 256
        embeds = model.get_input_embeddings()(ids).detach().requires_grad_(True)
        last = model(inputs_embeds=embeds, output_hidden_states=True).hidden_states[-1][0, -1]
        (grad,) = torch.autograd.grad(last.sum(), embeds)
        reach[name] = float(grad[0, 0].abs().max())
    assert reach["sliding"] == 0.0 and reach["global"] > 0.0
