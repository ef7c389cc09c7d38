"""The attention-kernel switch and the grouped sdpa kernel of packed continuations."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from lostmid.models import load_model
from lostmid.models.attention import (
    GROUPED_SDPA,
    SPLIT_KWARG,
    attention_kernel,
    grouped_sdpa_available,
    grouped_sdpa_forward,
    self_only_available,
    self_only_forward,
    split_attention,
    split_columns,
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


def _packed_layout(window: int | None):  # noqa: ANN202
    """Two stacked rows: contexts of 7 and 5 columns (the second padded to 7), then the
    question tokens of 3 continuations (padding inside a slot), then two decoded tokens
    each, interleaved as greedy steps write them; the queries are the last step's."""
    owners_k = torch.tensor(
        [
            [-1] * 7 + [0, 0, -2, 1, 2, 2, 2] + [0, 1, 2] * 2,
            [-1] * 5 + [-2] * 2 + [-2, 0, 0, 1, 1, -2, 2] + [0, 1, 2] * 2,
        ]
    )
    pos_k = torch.tensor(
        [
            list(range(7)) + [7, 8, 0, 7, 7, 8, 9] + [9, 8, 10, 10, 9, 11],
            list(range(7)) + [0, 5, 6, 5, 6, 0, 5] + [7, 7, 6, 8, 8, 7],
        ]
    )
    owners, positions = owners_k[:, -3:], pos_k[:, -3:]
    mine = (owners_k[:, None] == owners[..., None]) & (owners[..., None] >= 0)
    visible = (owners_k[:, None] == -1) | (mine & (pos_k[:, None] <= positions[..., None]))
    if window is not None:
        visible &= pos_k[:, None] > positions[..., None] - window
    mask = torch.zeros(visible.shape, dtype=torch.float64)
    mask = mask.masked_fill(~visible, torch.finfo(torch.float64).min)[:, None]
    return owners_k, owners, mask


@pytest.mark.parametrize("window", [None, 4])
def test_split_attention_equals_one_softmax_over_what_the_mask_shows(window: int | None) -> None:
    """Context and own columns attended apart and merged by log-sum-exp equal the dense
    attention under the packed mask (sliding window or not), grouped heads included."""
    owners_k, owners, mask = _packed_layout(window)
    split = split_columns(owners_k, owners)
    assert split is not None and split.context == 7
    # the first row's continuation 2: its 3 question columns and 2 decoded ones
    assert split.own[0, 2][split.own_ok[0, 2]].tolist() == [11, 12, 13, 16, 19]
    g = torch.Generator().manual_seed(1)
    query = torch.randn(2, 6, 3, 4, generator=g, dtype=torch.float64)
    key = torch.randn(2, 2, 20, 4, generator=g, dtype=torch.float64)
    value = torch.randn(2, 2, 20, 4, generator=g, dtype=torch.float64)
    want = _repeated(query * 0.5 * 4**0.5, key, value, mask)
    assert split.tail == 7  # the own columns, 13 after the context: few, attended densely
    for how in (split, dataclasses.replace(split, tail=None)):  # and gathered
        got = split_attention(query, key, value, mask, 0.5, how)
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-10)
    # a mask that let continuation 0 see continuation 1's columns is not what the split
    # reads: the split is exact only for packed masks
    leaky = mask.clone()
    leaky[0, 0, 0, 10] = 0.0
    assert not torch.allclose(_repeated(query * 0.5 * 4**0.5, key, value, leaky), got)


def test_continuations_switch_to_grouped_sdpa_and_back() -> None:
    """A packed continuation of an sdpa model runs the grouped kernel, the model's own
    restored after; an eager model stays eager (its numbers are eager's)."""
    assert grouped_sdpa_available()
    loaded = load_model("tiny-qwen2", init="random", seed=0)
    model, adapter = loaded.model, loaded.adapter
    assert model.config._attn_implementation == "sdpa"
    used: list[str] = []
    split: list[bool] = []
    attention = adapter.attention(adapter.blocks(model)[0])

    def record(module, args, kwargs) -> None:  # noqa: ANN001
        used.append(module.config._attn_implementation)
        split.append(kwargs.get(SPLIT_KWARG) is not None)

    handle = attention.register_forward_pre_hook(record, with_kwargs=True)
    context = torch.arange(1, 9)[None]
    cache = adapter.prefill(model, context)
    seen = (torch.full((1, 8), -1), torch.arange(8)[None])
    ids, owners, positions = torch.tensor([[3, 4]]), torch.tensor([[0, 1]]), torch.tensor([[8, 8]])
    adapter.continue_packed(model, cache, ids, owners, positions, seen)
    handle.remove()
    assert used == ["sdpa", GROUPED_SDPA]  # the prefill, then the continuation
    assert split == [False, True]  # which is told where its keys lie
    assert model.config._attn_implementation == "sdpa"


def test_attention_kernel_restores_the_model_s_own_after_an_error() -> None:
    model = load_model("tiny-llama", init="random", seed=0).model
    with pytest.raises(RuntimeError), attention_kernel(model, "eager"):
        assert model.config._attn_implementation == "eager"
        raise RuntimeError("inside")
    assert model.config._attn_implementation == "sdpa"


def _self_only(length: int, keys: int | None = None) -> torch.Tensor:
    """(1, 1, L, K) additive mask: query i sees key i + K - L alone."""
    keys = length if keys is None else keys
    mask = torch.full((length, keys), torch.finfo(torch.float64).min, dtype=torch.float64)
    mask[torch.arange(length), torch.arange(length) + keys - length] = 0.0
    return mask[None, None]


def test_self_only_is_softmax_attention_under_a_self_only_mask() -> None:
    """Each query head gets its own position's value from its group's key-value head (the
    reference copies the heads and takes the softmax over the mask); the wrong grouping
    differs."""
    attention = load_model("tiny-llama", init="random", seed=0).model.model.layers[0].self_attn
    g = torch.Generator().manual_seed(1)
    query = torch.randn(2, 6, 7, 8, generator=g, dtype=torch.float64)
    key = torch.randn(2, 2, 7, 8, generator=g, dtype=torch.float64)
    value = torch.randn(2, 2, 7, 8, generator=g, dtype=torch.float64)
    mask = _self_only(7)
    got, weights = self_only_forward(attention, query, key, value, mask, scaling=0.3)
    assert weights is None and got.shape == (2, 7, 6, 8)
    torch.testing.assert_close(got, _repeated(query, key, value, mask), rtol=0, atol=1e-12)
    assert not torch.allclose(got, _repeated(query, key, value, mask, tile=True))


def test_self_only_hands_what_it_cannot_reduce_to_the_family_s_eager() -> None:
    """Keys beyond the queries (a cache) or attention sinks: the family's eager attention
    with the caller's mask, not the values."""
    attention = load_model("tiny-llama", init="random", seed=0).model.model.layers[0].self_attn
    g = torch.Generator().manual_seed(2)
    query = torch.randn(1, 4, 3, 8, generator=g)
    key = torch.randn(1, 2, 5, 8, generator=g)
    value = torch.randn(1, 2, 5, 8, generator=g)
    mask = _self_only(3, 5).float()
    got, _ = self_only_forward(attention, query, key, value, mask, scaling=8**-0.5)
    torch.testing.assert_close(got, _repeated(query, key, value, mask).float())
    square = key[:, :, :3], value[:, :, :3]
    mask = torch.zeros(1, 1, 3, 3)  # not self-only: the eager path shows it, the values not
    sinks, _ = self_only_forward(attention, query, *square, mask, scaling=8**-0.5, sinks=1.0)
    values, _ = self_only_forward(attention, query, *square, mask, scaling=8**-0.5)
    torch.testing.assert_close(sinks, _repeated(query, *square, mask).float())
    assert not torch.allclose(sinks, values)
    assert self_only_available() and grouped_sdpa_available()
