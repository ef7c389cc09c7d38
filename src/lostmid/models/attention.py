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
half the attention's time in ``benchmarks/bench_gqa.py``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedModel

GROUPED_SDPA = "lostmid_grouped_sdpa"


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

    Grouped heads with a mask read their key-value head in place; everything else
    (one group, a position bias, a soft cap, attention sinks, no mask) is transformers'
    own ``sdpa`` unchanged."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    groups = query.shape[1] // key.shape[1]
    plain = (
        groups == 1
        or attention_mask is None
        or any(kwargs.get(k) is not None for k in ("position_bias", "softcap", "s_aux", "sinks"))
    )
    if plain:
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
