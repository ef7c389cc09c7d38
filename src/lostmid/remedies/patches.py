"""Inference-time patches of a loaded model: Ms-PoE's per-head rotary position scaling.

Ms-PoE (Zhang et al. 2024). Head h rotates its queries and keys by positions divided by a
ratio r_h, i.e. the angle of frequency f at position m is (m / r_h) f instead of m f, so
the score between positions m and n depends on (m - n) f / r_h: a head with a larger
ratio sees positions closer together. Ratios: evenly spaced in [1.2, 1.8] over the key/
value heads (``r_g = 1.2 + 0.6 g / (G - 1)``), every query head taking the ratio of the
key/value head it reads, so that relative positions stay consistent under grouped-query
attention. (Ms-PoE orders heads by a position-awareness score; we use the head order.)

Implementation: inside the context, the modeling module's ``apply_rotary_pos_emb`` is
replaced by one that rebuilds cos/sin per head from the positions the decoder received
(captured by a pre-hook: the ``position_ids`` passed in, else 0..T-1) and the model's own
``inv_freq`` and ``attention_scaling``; on exit everything is restored. It serves
one forward pass over whole sequences (teacher forcing), not cached decoding.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.models.attention import attention_kernel
from lostmid.typing import Float

if TYPE_CHECKING:
    from transformers import PreTrainedModel

MS_POE_RANGE = (1.2, 1.8)


def ms_poe_ratios(kv_heads: int, low: float = 1.2, high: float = 1.8) -> Float[torch.Tensor, " G"]:
    """r_g evenly spaced in [low, high] over the key/value heads (low alone for one head).

    >>> [round(r, 3) for r in ms_poe_ratios(4).tolist()]
    [1.2, 1.4, 1.6, 1.8]
    """
    if kv_heads == 1:
        return torch.tensor([low])
    return torch.linspace(low, high, kv_heads)


def rotate_per_head(
    x: Float[torch.Tensor, "B h T D"],
    positions: Float[torch.Tensor, "B T"],
    ratios: Float[torch.Tensor, " h"],
    inv_freq: Float[torch.Tensor, " D2"],
    scaling: float = 1.0,
) -> torch.Tensor:
    """RoPE with head h at positions / ratios[h] (rotate-half convention, D = 2 * D2):

        angle[b, h, t, i] = positions[b, t] / ratios[h] * inv_freq[i mod D2],
        out = x cos(angle) * scaling + rotate_half(x) sin(angle) * scaling.

    >>> x = torch.tensor([[[[1.0, 0.0]]]])  # one head, one position, D = 2
    >>> out = rotate_per_head(x, torch.tensor([[2.0]]), torch.tensor([2.0]), torch.tensor([1.0]))
    >>> [round(v, 4) for v in out.flatten().tolist()]  # rotated by angle 1
    [0.5403, 0.8415]
    """
    freqs = (
        positions.float()[:, None, :, None] / ratios.float()[None, :, None, None]
    ) * inv_freq.float()
    emb = torch.cat((freqs, freqs), dim=-1)  # (B, h, T, D)
    cos, sin = emb.cos() * scaling, emb.sin() * scaling
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return (x * cos.to(x.dtype)) + (rotated * sin.to(x.dtype))


def rotary_tables(rotary: nn.Module) -> list[tuple[torch.Tensor, float]]:
    """(inv_freq, attention scaling) of each RoPE table of a decoder's rotary module: one
    (``inv_freq``) in most families, one per layer type in Gemma 3 (``sliding_attention_
    inv_freq`` with base 1e4 and ``full_attention_inv_freq`` with base 1e6)."""
    buffers = dict(rotary.named_buffers(recurse=False))
    if "inv_freq" in buffers:
        return [(buffers["inv_freq"], float(getattr(rotary, "attention_scaling", 1.0)))]
    tables = []
    for name, buffer in buffers.items():
        if name.endswith("_inv_freq") and not name.endswith("original_inv_freq"):
            kind = name[: -len("_inv_freq")]
            tables.append((buffer, float(getattr(rotary, f"{kind}_attention_scaling", 1.0))))
    if not tables:
        raise UserError("ms-poe cannot find the model's rotary frequencies (no inv_freq buffer)")
    return tables


def _table_of(
    cos: torch.Tensor, positions: torch.Tensor, tables: list[tuple[torch.Tensor, float]]
) -> tuple[torch.Tensor, float]:
    """The table that made ``cos`` (B, T, D) at ``positions``: the one whose cosines at
    the last position match (a layer's table is not passed to the rotation function)."""
    if len(tables) == 1:
        return tables[0]
    last = positions[0, -1].float()

    def error(table: tuple[torch.Tensor, float]) -> float:
        inv_freq, scaling = table
        half = inv_freq.shape[0]
        expected = torch.cos(last * inv_freq.float().to(cos.device)) * scaling
        return float((cos[0, -1, :half].float() - expected).abs().max())

    return min(tables, key=error)


@contextmanager
def ms_poe(
    model: PreTrainedModel, ratios: Sequence[float] | None = None
) -> Iterator[PreTrainedModel]:
    """Run ``model`` with per-head rotary ratios (module docstring) inside the context.

    Raises:
        UserError: the model has no rotary position embeddings.
    """
    from lostmid.models import adapter_for_model

    adapter = adapter_for_model(model)
    if not adapter.has_rope:
        raise UserError(
            f"ms-poe rescales rotary positions; model type {model.config.model_type!r} has "
            "no rotary embeddings (it uses learned or no positions)"
        )
    decoder = adapter.base(model)
    rotary = decoder.get_submodule("rotary_emb")
    config = model.config
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    r_kv = (
        ms_poe_ratios(kv_heads, *MS_POE_RANGE)
        if ratios is None
        else torch.as_tensor(ratios, dtype=torch.float32)
    )
    if r_kv.shape != (kv_heads,) or bool((r_kv <= 0).any()):
        raise UserError(f"ms-poe needs {kv_heads} positive ratios (one per key/value head)")
    r_q = r_kv.repeat_interleave(heads // kv_heads)
    captured: dict[str, torch.Tensor] = {}

    def capture(module: nn.Module, args: tuple, kwargs: dict) -> None:
        ref: Any = kwargs.get("input_ids")  # a tensor: the decoder takes ids or embeddings
        if ref is None:
            ref = args[0] if args else kwargs.get("inputs_embeds")
        position_ids = kwargs.get("position_ids")
        if position_ids is None:
            position_ids = torch.arange(ref.shape[1], device=ref.device)[None].expand(
                ref.shape[0], -1
            )
        captured["positions"] = position_ids

    tables = rotary_tables(rotary)

    def patched(
        q: torch.Tensor, k: torch.Tensor, cos: Any, sin: Any, unsqueeze_dim: int = 1
    ) -> Any:
        positions = captured["positions"]
        inv_freq, scaling = _table_of(cos, positions, tables)
        inv_freq = inv_freq.to(q.device)
        return (
            rotate_per_head(q, positions, r_q.to(q.device), inv_freq, scaling),
            rotate_per_head(k, positions, r_kv.to(k.device), inv_freq, scaling),
        )

    # the family's modeling module, found at run time (its functions are patched by name)
    modeling: Any = sys.modules[type(adapter.attention(adapter.blocks(model)[0])).__module__]
    original = modeling.apply_rotary_pos_emb
    handle = decoder.register_forward_pre_hook(capture, with_kwargs=True)
    modeling.apply_rotary_pos_emb = patched
    try:
        yield model
    finally:
        modeling.apply_rotary_pos_emb = original
        handle.remove()


# -- calibration against the positional prior ------------------------------------------------

PRIOR_FLOOR = 1e-6


def prior_block(
    weights: Float[torch.Tensor, "B h T S"], region: tuple[int, int]
) -> Float[torch.Tensor, "B h Tq C"]:
    """What calibration reads of a prior pass's attention: the queries after the context
    on the context, ``[..., end:, start:end]``, a copy (the whole T x S weights of every
    calibrated layer would be gigabytes at 8192 tokens)."""
    start, end = region
    return weights[..., end:, start:end].clone()


def calibrate_weights(
    weights: Float[torch.Tensor, "B h T S"],
    prior: Float[torch.Tensor, "B h Tq C"],
    region: tuple[int, int],
) -> torch.Tensor:
    """Divide the attention on the context by its positional prior, keeping its mass.

    For queries i >= ``end`` (the tokens after the context) and keys j in the context
    ``[start, end)`` (0-indexed, half open), with ``prior`` p the prior's attention of
    those queries on those keys (:func:`prior_block`):

        w'_ij = (w_ij / p_ij) * sum_{k in C} w_ik / sum_{k in C} (w_ik / p_ik),

    with p floored at 1e-6; every other weight is unchanged, so each row still sums to 1
    and the query keeps the mass it gave the context.

    >>> w = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.5, 0.3]])[None, None]
    >>> p = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.25, 0.25]])[None, None]
    >>> out = calibrate_weights(w, prior_block(p, (0, 2)), (0, 2))
    >>> [round(v, 4) for v in out[0, 0, 2].tolist()]  # query 3
    [0.1167, 0.5833, 0.3]
    """
    start, end = region
    out = weights.clone()
    w = weights[..., end:, start:end]
    ratio = w / prior.clamp(min=PRIOR_FLOOR)
    scale = w.sum(-1, keepdim=True) / ratio.sum(-1, keepdim=True).clamp(min=1e-30)
    out[..., end:, start:end] = ratio * scale
    return out


@contextmanager
def calibrated(
    model: PreTrainedModel, layers: Sequence[int], region: tuple[int, int]
) -> Iterator[dict[str, Any]]:
    """Eager attention whose weights in ``layers`` (0-indexed) are recorded (while
    ``state["mode"] == "record"``: ``state["prior"][layer]``, the part calibration reads,
    :func:`prior_block`) or calibrated against the recorded prior with
    :func:`calibrate_weights` (``"calibrate"``)."""
    from lostmid.models import adapter_for_model

    adapter = adapter_for_model(model)
    blocks = adapter.blocks(model)
    modeling: Any = sys.modules[type(adapter.attention(blocks[0])).__module__]  # as in ms_poe
    if not hasattr(modeling, "eager_attention_forward"):
        raise UserError(
            f"calibrate needs the eager attention of its family; model type "
            f"{model.config.model_type!r} does not expose one"
        )
    index = {adapter.attention(block): i for i, block in enumerate(blocks)}
    state: dict[str, Any] = {"mode": "record", "prior": {}}
    wanted = set(layers)

    def eager(
        module: nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        scaling: float,
        dropout: float = 0.0,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        groups = getattr(module, "num_key_value_groups", 1)
        key = key.repeat_interleave(groups, dim=1)  # (B, h, S, d)
        value = value.repeat_interleave(groups, dim=1)
        scores = torch.matmul(query, key.transpose(2, 3)) * scaling
        if attention_mask is not None:
            scores = scores + attention_mask
        weights = torch.softmax(scores, dim=-1, dtype=torch.float32)  # (B, h, T, S)
        layer = index.get(module)
        if layer in wanted:
            if state["mode"] == "record":
                state["prior"][layer] = prior_block(weights.detach(), region)
            else:
                weights = calibrate_weights(weights, state["prior"][layer], region)
        output = torch.matmul(weights.to(value.dtype), value).transpose(1, 2).contiguous()
        return output, weights

    original = modeling.eager_attention_forward
    modeling.eager_attention_forward = eager
    try:
        with attention_kernel(model, "eager"):
            yield state
    finally:
        modeling.eager_attention_forward = original
