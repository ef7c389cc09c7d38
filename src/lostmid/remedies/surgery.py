"""Model surgery for the architecture remedies: a prefix-LM mask, residual routing, and
memory-token channels.

Both are :class:`~lostmid.train.model.ModelVariant` s that install forward hooks on the
freshly built model, so training, teacher-forced scoring and the influence measurement
(which calls the decoder with ``inputs_embeds``) all see the changed model.

Prefix-LM. With the first P real tokens the context (positions 1..P, 1-indexed), token
i may attend to token j when

    j <= i  (causal)   or   (i <= P and j <= P)   (bidirectional inside the context),

padding excluded; this is the support of the theory's ``prefix:P`` mask
(:class:`lostmid.theory.PrefixLM`). A pre-hook on the decoder replaces the 2-D padding
mask (or None) by this 4-D mask; a 4-D mask passed in by the caller is left alone.

Residual routing. Block l computes x + s_l * Attn(LN(x)) + ...: a forward hook on the
adapter's attention module multiplies its output by s_l, a fixed number or a learned
scalar (a parameter of the model, so the optimiser trains it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from lostmid.checks import check_positive
from lostmid.errors import UserError
from lostmid.train.model import ModelVariant
from lostmid.typing import Bool

if TYPE_CHECKING:
    from transformers import PreTrainedModel

GATES = "lostmid_residual_gates"


def prefix_attention_mask(valid: Bool[torch.Tensor, "B T"], prefix: int) -> torch.Tensor:
    """(B, 1, T, T) bool, True where query i may attend to key j (module docstring).

    ``valid`` marks real tokens (False: padding, on either side); the prefix counts
    real tokens. A padded query attends to itself only (no empty row).

    >>> m = prefix_attention_mask(torch.ones(1, 4, dtype=torch.bool), prefix=2)
    >>> m[0, 0].int().tolist()
    [[1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    """
    check_positive("prefix", prefix)
    valid = valid.bool()
    t = valid.shape[-1]
    index = torch.arange(t, device=valid.device)
    real = torch.cumsum(valid.long(), dim=-1) - 1  # (B, T) 0-indexed position among real tokens
    in_prefix = valid & (real < prefix)  # (B, T)
    causal = index[None, :, None] >= index[None, None, :]  # (1, T, T): j <= i
    allowed = causal & valid[:, None, :] & valid[:, :, None]
    allowed = allowed | (in_prefix[:, :, None] & in_prefix[:, None, :])
    allowed = allowed | torch.eye(t, dtype=torch.bool, device=valid.device)[None]
    return allowed[:, None]


def _decoder(model: PreTrainedModel) -> nn.Module:
    from lostmid.models import adapter_for_model

    return adapter_for_model(model).base(model)


def _as_attention_mask(
    allowed: torch.Tensor, model: PreTrainedModel, dtype: torch.dtype
) -> torch.Tensor:
    """Bool for SDPA; additive (0 or the dtype's minimum) for eager attention."""
    if getattr(model.config, "_attn_implementation", "sdpa") == "sdpa":
        return allowed
    zero = torch.zeros((), dtype=dtype, device=allowed.device)
    return torch.where(allowed, zero, torch.finfo(dtype).min)


def prefix_variant(prefix: int) -> ModelVariant:
    """Model surgery: the decoder attends with :func:`prefix_attention_mask` (P = prefix)."""
    check_positive("prefix", prefix)

    def apply(model: PreTrainedModel) -> PreTrainedModel:
        decoder = _decoder(model)

        def hook(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            given = kwargs.get("attention_mask")
            if given is not None and given.ndim == 4:
                return args, kwargs
            ids, embeds = kwargs.get("input_ids"), kwargs.get("inputs_embeds")
            if args:
                ids = args[0]
            ref = ids if ids is not None else embeds
            if ref is None:
                raise UserError("the prefix-LM mask needs input_ids or inputs_embeds")
            batch, length = ref.shape[:2]
            valid = (
                torch.ones(batch, length, dtype=torch.bool, device=ref.device)
                if given is None
                else given.bool()
            )
            dtype = embeds.dtype if embeds is not None else next(model.parameters()).dtype
            mask = _as_attention_mask(prefix_attention_mask(valid, prefix), model, dtype)
            return args, {**kwargs, "attention_mask": mask}

        decoder.register_forward_pre_hook(hook, with_kwargs=True)
        model.config.lostmid_prefix = prefix
        return model

    return ModelVariant(name=f"prefix:{prefix}", apply=apply)


class ResidualGates(nn.Module):
    """One scalar per layer multiplying the attention branch (a parameter when learned)."""

    def __init__(self, scales: Sequence[float], learned: bool) -> None:
        super().__init__()
        values = torch.tensor([float(s) for s in scales])
        if learned:
            self.scale = nn.Parameter(values)
        else:
            self.register_buffer("scale", values, persistent=False)


def residual_variant(scales: Sequence[float], learned: bool = False) -> ModelVariant:
    """Model surgery: the attention branch of layer l (0-indexed here) times ``scales[l]``;
    ``learned``: the scales are parameters (``len(scales)`` more parameters)."""

    def apply(model: PreTrainedModel) -> PreTrainedModel:
        from lostmid.models import adapter_for_model

        adapter = adapter_for_model(model)
        blocks = adapter.blocks(model)
        if len(scales) != len(blocks):
            raise UserError(f"residual routing needs {len(blocks)} scales, got {len(scales)}")
        gates = ResidualGates(scales, learned)
        gates.to(next(model.parameters()).device)
        setattr(model, GATES, gates)  # registered as a submodule: trained and moved with it
        for layer, block in enumerate(blocks):
            # the first output of the attention module is the branch added to the stream
            module = adapter.attention(block)

            def hook(module: nn.Module, args: tuple, output: Any, layer: int = layer) -> Any:
                s = gates.scale[layer].to(
                    output[0].dtype if isinstance(output, tuple) else output.dtype
                )
                if isinstance(output, tuple):
                    return (output[0] * s, *output[1:])
                return output * s

            module.register_forward_hook(hook)
        return model

    name = "gate" if learned else "schedule"
    return ModelVariant(name=f"residual:{name}", apply=apply)


# -- dedicated middle-position channels: memory tokens -----------------------------------------

MEMORY = "lostmid_memory_tokens"


def memory_slots(context: int, count: int) -> list[int]:
    """Where the ``count`` memory tokens go: before original position
    ``round(context * m / (count + 1))``, m = 1..count (0-indexed), i.e. at regular
    intervals of the context's ``context`` tokens, none at its ends.

    >>> memory_slots(20, 3)
    [5, 10, 15]
    """
    from lostmid.checks import check_positive as positive

    positive("memory tokens", count)
    positive("context", context)
    return [round(context * m / (count + 1)) for m in range(1, count + 1)]


class MemoryTokens(nn.Module):
    """``count`` learned vectors (count, d), initialised like token embeddings (std)."""

    def __init__(self, count: int, hidden: int, std: float) -> None:
        super().__init__()
        self.vectors = nn.Parameter(torch.randn(count, hidden) * std)


def insert_memory(
    embeds: torch.Tensor, memory: torch.Tensor, slots: Sequence[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T + M, d) with memory vector m inserted before original position slots[m], and
    the (T,) indices of the original positions in the longer sequence.

    >>> x = torch.arange(4.0).view(1, 4, 1); mem = torch.tensor([[9.0]])
    >>> longer, keep = insert_memory(x, mem, [2])
    >>> longer.flatten().tolist(), keep.tolist()
    ([0.0, 1.0, 9.0, 2.0, 3.0], [0, 1, 3, 4])
    """
    batch, length, _ = embeds.shape
    pieces: list[torch.Tensor] = []
    keep: list[int] = []
    at = 0
    for m, slot in enumerate(s for s in slots if s <= length):
        pieces.append(embeds[:, at:slot])
        keep.extend(range(at + m, slot + m))
        pieces.append(memory[m].to(embeds.dtype).expand(batch, 1, -1))
        at = slot
    inserted = len(pieces) // 2
    pieces.append(embeds[:, at:])
    keep.extend(range(at + inserted, length + inserted))
    return torch.cat(pieces, dim=1), torch.tensor(keep, device=embeds.device)


def channels_variant(context: int, count: int) -> ModelVariant:
    """Model surgery: ``count`` learned memory tokens inside the first ``context`` tokens
    (:func:`memory_slots`), visible to every later position through ordinary causal
    attention; the decoder's outputs at the memory positions are dropped, so logits and
    influence stay over the original tokens. Adds ``count * d`` parameters. Batches
    must be unpadded (every row of the retrieval tasks has the same length)."""
    slots = memory_slots(context, count)

    def apply(model: PreTrainedModel) -> PreTrainedModel:
        from lostmid.models import adapter_for_model

        adapter = adapter_for_model(model)
        decoder = adapter.base(model)
        table = adapter.token_embedding(model)
        weight = table.get_parameter("weight")  # (V, d)
        std = float(weight.detach().std())
        memory = MemoryTokens(count, weight.shape[1], std).to(weight.device)
        setattr(model, MEMORY, memory)  # a submodule: trained and moved with the model
        state: dict[str, torch.Tensor] = {}

        def before(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            ids = args[0] if args else kwargs.get("input_ids")
            embeds = kwargs.get("inputs_embeds")
            if embeds is None:
                embeds = table(ids)
            mask = kwargs.get("attention_mask")
            if mask is not None and (mask.ndim != 2 or not bool(mask.bool().all())):
                raise UserError("memory-token channels need unpadded batches (equal lengths)")
            longer, keep = insert_memory(embeds, memory.vectors, slots)
            state["keep"] = keep
            batch, length = longer.shape[:2]
            changed = {**kwargs, "input_ids": None, "inputs_embeds": longer}
            if mask is not None:
                changed["attention_mask"] = torch.ones(
                    batch, length, dtype=mask.dtype, device=mask.device
                )
            if kwargs.get("position_ids") is not None:
                changed["position_ids"] = torch.arange(length, device=longer.device)[None].expand(
                    batch, -1
                )
            return (), changed

        def after(module: nn.Module, args: tuple, kwargs: dict, output: Any) -> Any:
            output.last_hidden_state = output.last_hidden_state[:, state["keep"]]
            return output

        decoder.register_forward_pre_hook(before, with_kwargs=True)
        decoder.register_forward_hook(after, with_kwargs=True)
        return model

    return ModelVariant(name=f"channels:{count}", apply=apply)
