"""Which attention kernel a model runs, switched for a block of code.

:func:`attention_kernel` sets a loaded model's attention implementation (``eager``,
``sdpa``, or :data:`GROUPED_SDPA`) for the duration of a ``with`` block and restores it
after, also when the block raises: the one home of that switch (the attention-weight
readout needs ``eager``, the calibration patch replaces ``eager``'s function, packed
continuations read grouped key-value heads in place).

:data:`GROUPED_SDPA` is transformers' ``sdpa`` without the copy of the key-value heads
under a mask. Under grouped-query attention (SmolLM2: 9 query heads, 3 key-value heads)
transformers repeats every cached key and value per query head (``repeat_kv``) before
``scaled_dot_product_attention`` whenever a mask is given on a CPU; a packed
continuation gives one at every step, so each step copied the whole cached context
three times a layer. Here torch's own ``enable_gqa`` reads each key-value head for its
group of query heads: the same numbers (the test compares it with the repeated heads),
half the attention's time at SmolLM2's shape (75 questions after a 4,108-token
context, 4 contexts: 207 -> 102 ms a layer).

A packed forward (several continuations in one row after a shared context) also tells
the kernel where its keys lie (:class:`SplitColumns`): every query sees the whole
context, and otherwise only its own continuation's columns, a few dozen of the thousands
that other continuations add to the row. The kernel then attends in two parts, the
context (one dense pass, no column wasted) and each query's own columns (densely where
they all lie in a short tail, as when questions are read for the first time; gathered
in a decoding step, where they are spread over the row), and merges them by their
log-sum-exp:

    out = out_ctx * exp(lse_ctx - lse) + out_own * exp(lse_own - lse),
    lse = log(exp(lse_ctx) + exp(lse_own)),

which is softmax attention over the union, exactly; the dense mask still decides what
each part sees (windows, causality), read at the columns each part attends to.

:data:`SELF_ONLY` is attention under a mask that lets every position see only itself
(the branch gains' passes, :mod:`lostmid.influence.gain_passes`): a softmax over one
entry is 1, so the output at j is its own value v_j, exactly, and no query or key enters
it. A kernel given that mask still scores every pair and back-propagates through the
L x L scores, whose gradients are zero: 55% of a layer's gain passes at SmolLM2's shape
and 2,048 tokens (1.4 of 2.55 s). The kernel returns the values (each key-value head read
for its group of query heads), and the gradients reach the inputs through the value
path alone: the same quantity without the zero terms' rounding (a layer's float32
vector-Jacobian products 1.5-2.4x closer to a float64 reference). What it cannot reduce
to the values (attention sinks, a position bias, dropout in training, a query that reads
a cache) it hands to the family's own eager attention with the caller's mask.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedModel

GROUPED_SDPA = "lostmid_grouped_sdpa"
SPLIT_KWARG = "lostmid_split"
# a gathered key costs about 50 dense ones (the copy and many tiny products; 560 queries
# of 16 continuations at SmolLM2's shape, one thread): a contiguous span of own columns
# up to this many times the longest continuation is attended densely instead
SLICE_RATIO = 32
BEYOND_SOFTMAX = ("position_bias", "s_aux", "sinks")
"""Attention-function keywords that add to a softmax over the keys (a bias, sink logits):
a kernel that reduces attention to something simpler hands these to transformers'."""


@dataclass(frozen=True)
class SplitColumns:
    """Where a packed forward's queries find their keys (module doc).

    Attributes:
        context: the columns [0, context) hold each row's shared context (padding
            after a shorter one, masked); the columns after it hold continuations.
        own: (R, W, M) the columns of query w's own continuation in row r.
        own_ok: (R, W, M) which of them exist (a continuation shorter than M, or a
            query that is padding: none).
        tail: where every query's own columns lie in [tail, P) and that span is at most
            ``SLICE_RATIO`` x M: the own part then attends densely over those columns
            (a forward that reads questions for the first time) instead of gathering
            them (a decoding step, whose own columns are spread over the row).
    """

    context: int
    own: torch.Tensor
    own_ok: torch.Tensor
    tail: int | None = None
    context_masks: dict[int, tuple[torch.Tensor, torch.Tensor | None]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """The context part's mask, once per forward (:func:`_context_mask`): every layer of a
    kind gets the same mask object, which the entry holds (so its id cannot be
    another's); the memo goes with this object, at the end of the forward."""


def split_columns(owner_k: torch.Tensor, owners: torch.Tensor) -> SplitColumns | None:
    """The :class:`SplitColumns` of a packed forward from each column's owner ``owner_k``
    (R, P) (-1 context, -2 padding, i >= 0 continuation i; the new columns last) and each
    query's ``owners`` (R, W). None where a context column follows a continuation's
    (the two parts would not be contiguous).

    >>> owner_k = torch.tensor([[-1, -1, -2, 0, 1, 0, 1]])
    >>> s = split_columns(owner_k, torch.tensor([[0, 1]]))
    >>> s.context, s.own.tolist(), s.own_ok.tolist(), s.tail
    (2, [[[3, 5], [4, 6]]], [[[True, True], [True, True]]], 3)
    """
    rows, width = owner_k.shape
    is_context = (owner_k == -1).any(dim=0)
    context = int(is_context.nonzero().max()) + 1 if bool(is_context.any()) else 0
    if bool((owner_k[:, :context] >= 0).any()):
        return None
    after = owner_k[:, context:]  # (R, P')
    span = after.shape[1]
    count_owners = int(max(int(owner_k.max()), int(owners.max()))) + 1
    if span == 0 or count_owners == 0:
        return None
    # each owner's columns in column order: sort by (owner, column), padding last
    owner = torch.where(after >= 0, after, count_owners)
    order = torch.argsort(owner * span + torch.arange(span, device=after.device), dim=1)
    sorted_owner = owner.gather(1, order)
    counts = torch.zeros((rows, count_owners + 1), dtype=torch.long, device=after.device)
    counts.scatter_add_(1, sorted_owner, torch.ones_like(sorted_owner))
    starts = counts.cumsum(dim=1) - counts
    rank = torch.arange(span, device=after.device) - starts.gather(1, sorted_owner)
    most = max(int(counts[:, :count_owners].max()), 1)
    table = torch.zeros((rows, count_owners + 1, most), dtype=torch.long, device=after.device)
    real = sorted_owner < count_owners
    r = torch.arange(rows, device=after.device)[:, None].expand(-1, span)
    table[r[real], sorted_owner[real], rank[real]] = order[real] + context
    exists = torch.arange(most, device=after.device) < counts[:, :count_owners, None]
    mine = owners.clamp(min=0)[..., None].expand(-1, -1, most)  # (R, W, M)
    own = table[:, :count_owners].gather(1, mine)
    own_ok = exists.gather(1, mine) & (owners >= 0)[..., None]
    first = int(own.masked_fill(~own_ok, width).min()) if bool(own_ok.any()) else width
    tail = first if width - first <= SLICE_RATIO * most else None
    return SplitColumns(context, own, own_ok, tail)


def _attend(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(softmax attention, its log-sum-exp) of (B, H, Q, D) queries over (B, H, K, D) keys
    under an additive mask: torch's CPU flash kernel where it serves, else the math. A
    query that sees nothing gets 0 and a log-sum-exp of the dtype's minimum (no NaN)."""
    acc = torch.promote_types(query.dtype, torch.float32)
    flash = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if flash is not None and query.device.type == "cpu" and query.dtype == torch.float32:
        out, lse = flash(query, key, value, 0.0, False, attn_mask=mask, scale=scale)
    else:
        scores = (query @ key.transpose(-1, -2)).to(acc) * scale
        if mask is not None:
            scores = scores + mask.to(acc)
        lse = torch.logsumexp(scores, dim=-1)
        out = torch.exp(scores - lse[..., None]).to(value.dtype) @ value
    lse = lse.to(acc)
    if not bool(torch.isfinite(lse).all()):
        low = torch.finfo(acc).min
        out = torch.where(torch.isfinite(lse)[..., None], out, torch.zeros_like(out))
        lse = torch.nan_to_num(lse, nan=low, neginf=low, posinf=low)
    return out, lse


def _by_group(mask: torch.Tensor, groups: int) -> torch.Tensor:
    """A mask (R, 1, W, K) for queries grouped as (R, Hkv, groups * W, D)."""
    if groups == 1 or mask.shape[2] == 1:
        return mask
    rows, _, width, columns = mask.shape
    return (
        mask[:, :, None]
        .expand(rows, 1, groups, width, columns)
        .reshape(rows, 1, groups * width, columns)
    )


def _context_mask(mask: torch.Tensor, split: SplitColumns, groups: int) -> torch.Tensor | None:
    """``mask[..., :context]`` for grouped queries: None where it hides nothing, one row
    per context (R, 1, 1, C) where every query sees the same columns (causal layers: the
    whole context but its padding), else expanded over the groups (sliding windows)."""
    hit = split.context_masks.get(id(mask))
    if hit is not None and hit[0] is mask:
        return hit[1]
    part = mask[..., : split.context]
    first = part[:, :, :1]
    found: torch.Tensor | None
    if bool((part == first).all()):
        found = first if bool((first < 0).any()) else None
    else:
        found = _by_group(part, groups)
    split.context_masks[id(mask)] = (mask, found)
    return found


def split_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor,
    scale: float,
    split: SplitColumns,
) -> torch.Tensor:
    """Attention of (R, H, W, D) queries over (R, Hkv, P, D) keys under the additive
    ``mask`` (R, 1, W, P), in two parts merged by their log-sum-exp (module doc): (R, W,
    H, D), equal to one softmax over the columns the mask lets each query see, provided
    those lie in the context or in its own columns."""
    rows, heads, width, dim = query.shape
    acc = torch.promote_types(query.dtype, torch.float32)  # float64 stays float64
    kv_heads = key.shape[1]
    groups = heads // kv_heads
    context = split.context
    grouped = query.reshape(rows, kv_heads, groups * width, dim)

    def as_queries(out: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(R, Hkv, G * W, ...) results as (R, W, Hkv, G, ...)."""
        out = out.reshape(rows, kv_heads, groups, width, dim).permute(0, 3, 1, 2, 4)
        return out, lse.reshape(rows, kv_heads, groups, width).permute(0, 3, 1, 2)

    out_c, lse_c = as_queries(
        *_attend(
            grouped,
            key[:, :, :context],
            value[:, :, :context],
            _context_mask(mask, split, groups),
            scale,
        )
    )
    if split.tail is not None:  # every query's own columns lie in the last few: dense
        tail = split.tail
        out_o, lse_o = as_queries(
            *_attend(
                grouped,
                key[:, :, tail:],
                value[:, :, tail:],
                _by_group(mask[..., tail:], groups),
                scale,
            )  # fmt: skip
        )
    else:  # each query's own columns, gathered: (R, W, M, Hkv, D)
        r = torch.arange(rows, device=query.device)[:, None, None]
        own_k = key.transpose(1, 2)[r, split.own]
        own_v = value.transpose(1, 2)[r, split.own]
        q = query.transpose(1, 2).reshape(rows, width, kv_heads, groups, dim)
        scores = torch.einsum("rwkgd,rwmkd->rwkgm", q, own_k).to(acc) * scale
        low = torch.finfo(acc).min
        own_mask = mask[:, 0].gather(2, split.own).to(acc).masked_fill(~split.own_ok, low)
        scores = (scores + own_mask[:, :, None, None, :]).clamp(min=low)
        lse_o = torch.logsumexp(scores, dim=-1)  # (R, W, Hkv, G)
        weights = torch.exp(scores - lse_o[..., None]).to(value.dtype)
        out_o = torch.einsum("rwkgm,rwmkd->rwkgd", weights, own_v)
    lse = torch.logaddexp(lse_c, lse_o)
    out = (
        out_c.to(acc) * torch.exp(lse_c - lse)[..., None]
        + out_o.to(acc) * torch.exp(lse_o - lse)[..., None]
    )
    return out.reshape(rows, width, heads, dim).to(query.dtype)


def grouped_sdpa_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' attention-function signature: (B, W, H, D) output, no weights.

    A packed forward that says where its keys lie (``lostmid_split``, a
    :class:`SplitColumns`) attends in two parts (:func:`split_attention`); grouped heads
    with a mask read their key-value head in place; everything else (one group, a
    position bias, a soft cap, attention sinks, no mask) is transformers' own ``sdpa``
    unchanged."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    split = kwargs.pop(SPLIT_KWARG, None)
    groups = query.shape[1] // key.shape[1]
    unusual = attention_mask is None or any(
        kwargs.get(k) is not None for k in (*BEYOND_SOFTMAX, "softcap")
    )
    exact = not unusual and not (module.training and dropout > 0)
    if split is not None and attention_mask is not None and exact:
        scale = scaling if scaling is not None else query.shape[-1] ** -0.5
        return split_attention(query, key, value, attention_mask, scale, split), None
    if groups == 1 or unusual:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        enable_gqa=True,
    )
    return out.transpose(1, 2).contiguous(), None


@functools.cache
def grouped_sdpa_available() -> bool:
    """Whether :data:`GROUPED_SDPA` is registered: torch's ``enable_gqa`` (torch >= 2.5)
    and transformers' ``AttentionInterface`` (Transformers >= 4.48)."""
    try:
        from transformers import AttentionInterface
    except ImportError:  # pragma: no cover - old transformers
        return False
    try:
        q = torch.zeros((1, 2, 1, 4))
        kv = torch.zeros((1, 1, 1, 4))
        torch.nn.functional.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)
    except TypeError:  # pragma: no cover - torch < 2.5
        return False
    AttentionInterface.register(GROUPED_SDPA, grouped_sdpa_forward)
    return True


SELF_ONLY = "lostmid_self_only"


def self_only_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """transformers' attention-function signature for a self-only mask (module doc):
    (B, L, H, D), position j's own value for every query head. Only for a caller whose
    ``attention_mask`` lets each position see itself alone; what else would change the
    output (sinks, a position bias, dropout in training, keys beyond the queries) runs
    the family's eager attention with that mask."""
    unusual = (
        any(kwargs.get(k) is not None for k in BEYOND_SOFTMAX)
        or (module.training and dropout > 0)
        or key.shape[2] != query.shape[2]
    )
    if unusual:
        family = sys.modules.get(type(module).__module__)
        own: Any = getattr(family, "eager_attention_forward", None)
        if own is None:  # pragma: no cover - every family module defines one
            from transformers.integrations.sdpa_attention import sdpa_attention_forward

            own = sdpa_attention_forward
        out, weights = own(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
        return out, weights
    groups = query.shape[1] // value.shape[1]
    out = value.repeat_interleave(groups, dim=1) if groups > 1 else value  # (B, H, L, D)
    return out.transpose(1, 2).contiguous().to(query.dtype), None


@functools.cache
def self_only_available() -> bool:
    """Whether :data:`SELF_ONLY` is registered (transformers' ``AttentionInterface``,
    Transformers >= 4.48); without it the caller's mask does the work."""
    try:
        from transformers import AttentionInterface
    except ImportError:  # pragma: no cover - old transformers
        return False
    AttentionInterface.register(SELF_ONLY, self_only_forward)
    return True


@contextlib.contextmanager
def attention_kernel(model: PreTrainedModel, name: str) -> Iterator[None]:
    """Run ``model`` with attention implementation ``name`` inside the block, the
    previous one restored after (when it was set)."""
    config = model.config
    before = getattr(config, "_attn_implementation", None)
    config._attn_implementation = name
    try:
        yield
    finally:
        if before is not None:
            config._attn_implementation = before
