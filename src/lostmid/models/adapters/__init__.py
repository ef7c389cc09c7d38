"""One adapter per model family, and discovery for families no adapter names.

Adding a family is one small file (a :class:`Layout` and what paths cannot say) and
one entry in ``ADAPTERS``. :func:`adapter_for_model` picks the adapter of a built
model: by ``model_type`` first; otherwise it tries every layout on the module tree,
and serves the model with the first layout that finds every place and names every
norm of a block, after checking on a 4-token forward that block l's output is
x + a + m with a, m the branches the layout names. When nothing fits, the generic
adapter carries one line saying what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from lostmid.models.adapters.base import FamilyAdapter, is_norm, mask_specs
from lostmid.models.adapters.bloom import BloomAdapter
from lostmid.models.adapters.gpt2 import GPT2Adapter
from lostmid.models.adapters.layout import IdentityRotary, Layout, LayoutAdapter, resolve_path
from lostmid.models.adapters.llama import Gemma2Adapter, Gemma3Adapter, LlamaStyleAdapter
from lostmid.models.adapters.neox import GPTNeoXAdapter
from lostmid.models.adapters.opt import OPTAdapter
from lostmid.models.adapters.phi import PhiAdapter

if TYPE_CHECKING:
    from transformers import PreTrainedModel


ADAPTERS: tuple[LayoutAdapter, ...] = (
    LlamaStyleAdapter(),
    Gemma2Adapter(),
    Gemma3Adapter(),
    GPT2Adapter(),
    GPTNeoXAdapter(),
    OPTAdapter(),
    BloomAdapter(),
    PhiAdapter(),
)


def adapter_for(model_type: str) -> FamilyAdapter:
    """The adapter serving ``model_type`` (a config's ``model_type``), else the generic one.

    >>> adapter_for("mistral").name, adapter_for("xglm").name
    ('llama-style', 'generic')
    """
    for adapter in ADAPTERS:
        if model_type in adapter.model_types:
            return adapter
    known = ", ".join(sorted({t for a in ADAPTERS for t in a.model_types}))
    return FamilyAdapter(model_type, f"adapters exist for: {known}")


def _block_sums_hold(model: PreTrainedModel, adapter: LayoutAdapter) -> bool:
    """Whether block 1's output is its input plus the two branches the layout names."""
    block = adapter.blocks(model)[0]
    kept: dict[str, torch.Tensor] = {}

    def keep(name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
            if name == "x":
                kept["x"] = args[0] if args else kwargs["hidden_states"]  # (1, 4, d)
            kept[f"{name}_out"] = output[0] if isinstance(output, tuple) else output

        return hook

    places = {"x": block, "a": adapter.attention_out(block), "m": adapter.mlp_out(block)}
    handles = [m.register_forward_hook(keep(k), with_kwargs=True) for k, m in places.items()]
    try:
        embed = adapter.token_embedding(model)
        table = embed.get_parameter("weight")  # (V, d)
        ids = torch.arange(4, device=table.device)[None] % table.shape[0]
        with torch.no_grad():
            adapter.base(model)(inputs_embeds=embed(ids), use_cache=False)
    except Exception:  # noqa: BLE001 - any failure means the layout does not describe it
        return False
    finally:
        for handle in handles:
            handle.remove()
    if not {"x", "x_out", "a_out", "m_out"} <= kept.keys():
        return False
    x, out = kept["x"].float(), kept["x_out"].float()
    total = x + kept["a_out"].float() + kept["m_out"].float().reshape(x.shape)
    return bool((out - total).norm() <= 1e-2 * out.norm() + 1e-6)


def adapter_for_model(model: PreTrainedModel) -> FamilyAdapter:
    """The adapter for a built causal LM: its family's, a discovered one, or generic.

    >>> from lostmid.models import load_model
    >>> adapter_for_model(load_model("tiny-qwen2").model).name
    'llama-style'
    """
    config = getattr(model, "config", None)
    model_type = str(getattr(config, "model_type", "?"))
    named = adapter_for(model_type)
    if isinstance(named, LayoutAdapter):
        why = named.unsupported(config)
        if why is None:
            missing = named.layout.missing(model)
            why = None if missing is None else f"the {named.name} adapter finds no {missing}"
        return named if why is None else FamilyAdapter(model_type, why)
    closest = None
    for adapter in ADAPTERS:
        layout = adapter.layout
        missing = layout.missing(model) or adapter.unsupported(config)
        if missing is None:
            if _block_sums_hold(model, adapter):
                return adapter
            missing = "block output equal to input + attention + MLP"
        blocks = resolve_path(model, f"{layout.base}.{layout.blocks}")
        if closest is None and isinstance(blocks, nn.ModuleList):
            closest = f"closest layout, {adapter.name}, finds no {missing}"
    looked = ", ".join(sorted({f"{a.layout.base}.{a.layout.blocks}" for a in ADAPTERS}))
    return FamilyAdapter(model_type, closest or f"no blocks at any of {looked}")


__all__ = [
    "ADAPTERS",
    "BloomAdapter",
    "FamilyAdapter",
    "GPT2Adapter",
    "GPTNeoXAdapter",
    "Gemma2Adapter",
    "Gemma3Adapter",
    "IdentityRotary",
    "Layout",
    "LayoutAdapter",
    "LlamaStyleAdapter",
    "OPTAdapter",
    "PhiAdapter",
    "adapter_for",
    "adapter_for_model",
    "is_norm",
    "mask_specs",
]
