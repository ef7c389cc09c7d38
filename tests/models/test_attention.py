"""The attention-kernel switch and the grouped sdpa kernel of packed continuations."""

from __future__ import annotations

import pytest
import torch

from lostmid.models import load_model
from lostmid.models.attention import (
    GROUPED_SDPA,
    attention_kernel,
    grouped_sdpa_available,
    grouped_sdpa_forward,
)


def _repeated(query, key, value, mask, tile=False):  # noqa: ANN001, ANN202
    """The reference: every key-value head copied for its group of query heads (query
    head h reads key-value head h // groups; ``tile``: h % heads, the wrong grouping)."""
    groups = query.shape[1] // key.shape[1]
    copy = (
        (lambda x: x.repeat(1, groups, 1, 1))
        if tile
        else (lambda x: x.repeat_interleave(groups, 1))
    )
    key, value = copy(key), copy(value)
    scores = query @ key.transpose(2, 3) / query.shape[-1] ** 0.5 + mask
    return (torch.softmax(scores, -1) @ value).transpose(1, 2)


def test_grouped_sdpa_equals_repeated_heads_under_a_mask() -> None:
    g = torch.Generator().manual_seed(0)
    query = torch.randn(2, 6, 5, 8, generator=g, dtype=torch.float64)
    key = torch.randn(2, 2, 11, 8, generator=g, dtype=torch.float64)
    value = torch.randn(2, 2, 11, 8, generator=g, dtype=torch.float64)
    seen = torch.rand(2, 1, 5, 11, generator=g) < 0.6
    seen[..., 0] = True  # every query sees a column
    mask = torch.zeros(seen.shape, dtype=torch.float64).masked_fill(~seen, float("-inf"))
    module = torch.nn.Module().eval()
    out, weights = grouped_sdpa_forward(module, query, key, value, mask)
    assert weights is None and out.shape == (2, 5, 6, 8)
    torch.testing.assert_close(out, _repeated(query, key, value, mask), rtol=1e-12, atol=1e-12)
    assert not torch.allclose(out, _repeated(query, key, value, mask, tile=True))


def test_continuations_switch_to_grouped_sdpa_and_back() -> None:
    """A packed continuation of an sdpa model runs the grouped kernel, the model's own
    restored after; an eager model stays eager (its numbers are eager's)."""
    assert grouped_sdpa_available()
    loaded = load_model("tiny-qwen2", init="random", seed=0)
    model, adapter = loaded.model, loaded.adapter
    assert model.config._attn_implementation == "sdpa"
    used: list[str] = []
    attention = adapter.attention(adapter.blocks(model)[0])

    def record(module, args, kwargs) -> None:  # noqa: ANN001
        used.append(module.config._attn_implementation)

    handle = attention.register_forward_pre_hook(record, with_kwargs=True)
    context = torch.arange(1, 9)[None]
    cache = adapter.prefill(model, context)
    seen = (torch.full((1, 8), -1), torch.arange(8)[None])
    ids, owners, positions = torch.tensor([[3, 4]]), torch.tensor([[0, 1]]), torch.tensor([[8, 8]])
    adapter.continue_packed(model, cache, ids, owners, positions, seen)
    handle.remove()
    assert used == ["sdpa", GROUPED_SDPA]  # the prefill, then the continuation
    assert model.config._attn_implementation == "sdpa"


def test_attention_kernel_restores_the_model_s_own_after_an_error() -> None:
    model = load_model("tiny-llama", init="random", seed=0).model
    with pytest.raises(RuntimeError), attention_kernel(model, "eager"):
        assert model.config._attn_implementation == "eager"
        raise RuntimeError("inside")
    assert model.config._attn_implementation == "sdpa"
