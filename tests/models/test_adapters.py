"""Adapters: canonical places per family, and the positional-encoding switches."""

from __future__ import annotations

import pytest
import torch

from lostmid.errors import UserError
from lostmid.models import load_model


def _attention_weights(loaded, x: torch.Tensor) -> torch.Tensor:
    """Attention probabilities of layer 1 (B, heads, L, L) for input embeddings x."""
    kept = {}
    attn = loaded.adapter.attention(loaded.adapter.blocks(loaded.model)[0])

    def keep(module, args, output) -> None:
        kept["w"] = output[1]

    handle = attn.register_forward_hook(keep)
    try:
        with torch.no_grad():
            loaded.adapter.base(loaded.model)(inputs_embeds=x, use_cache=False)
    finally:
        handle.remove()
    return kept["w"]


def _equal_inputs(loaded, length: int = 12) -> torch.Tensor:
    # The same token at every position, scaled up so q.k is far from 0.
    ids = torch.full((1, length), 5)
    return loaded.adapter.token_embedding(loaded.model)(ids) * 50.0  # (1, L, d)


def test_no_rope_makes_scores_independent_of_offset() -> None:
    """Equal inputs: with rotary, scores vary with i - j; without, row i is uniform 1/i."""
    kwargs = {"seed": 0, "dtype": "float64", "attn_implementation": "eager"}
    with_rope = load_model("tiny-qwen2", **kwargs)
    without = load_model("tiny-qwen2", no_rope=True, **kwargs)
    w_on = _attention_weights(with_rope, _equal_inputs(with_rope))[0]  # (heads, L, L)
    w_off = _attention_weights(without, _equal_inputs(without))[0]
    length = w_off.shape[-1]
    uniform = torch.tril(torch.ones(length, length, dtype=torch.float64)) / torch.arange(
        1, length + 1, dtype=torch.float64
    ).unsqueeze(1)
    assert torch.allclose(w_off, uniform.expand_as(w_off), atol=1e-12)
    assert (w_on - uniform).abs().max() > 1e-3


def test_no_pos_emb_makes_equal_inputs_give_equal_outputs() -> None:
    for switch, should_be_equal in ((False, False), (True, True)):
        loaded = load_model("tiny-gpt2", no_pos_emb=switch, dtype="float64")
        with torch.no_grad():
            hidden = loaded.adapter.base(loaded.model)(
                inputs_embeds=_equal_inputs(loaded), use_cache=False
            ).last_hidden_state[0]  # (L, d)
        assert torch.allclose(hidden, hidden[:1].expand_as(hidden), atol=1e-10) is should_be_equal


def test_removing_what_the_architecture_lacks_is_an_error() -> None:
    with pytest.raises(UserError, match="gpt2 has no rotary embeddings.*use --no-pos-emb"):
        load_model("tiny-gpt2", no_rope=True)
    with pytest.raises(UserError, match="qwen2 has no learned position embeddings.*use --no-rope"):
        load_model("tiny-qwen2", no_pos_emb=True)


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
