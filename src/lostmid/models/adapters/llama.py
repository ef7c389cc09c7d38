"""Llama-style decoders: Llama, Qwen2, Qwen3, Mistral (the same module names).

``model.model.embed_tokens`` -> ``model.model.layers[l]`` (``input_layernorm`` ->
``self_attn``, ``post_attention_layernorm`` -> ``mlp``) -> ``model.model.norm``; rotary
embeddings in ``model.model.rotary_emb``, shared by all layers. Mistral slides a
window over every layer (``sliding_window``); Qwen2/Qwen3 say per layer
(``layer_types``): :meth:`layer_masks` reads both.

Gemma2 has the same paths plus a norm on each branch output (``post_attention_layernorm``
is there a post-norm of the attention branch, not the MLP's pre-norm), alternating
sliding-window and global layers, and tanh soft-capping of the attention logits and of
the output logits (which :meth:`Gemma2Adapter.lm_head` includes).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from lostmid.models.adapters.rotary import DECODER_LAYOUT, RotaryAdapter
from lostmid.models.shape import ModelShape

if TYPE_CHECKING:
    from transformers import PreTrainedModel


class LlamaStyleAdapter(RotaryAdapter):
    name = "llama-style"
    model_types = ("llama", "qwen2", "qwen3", "mistral")


class SoftcappedHead(nn.Module):
    """Logits soft-capped as Gemma2 does after its LM head: cap * tanh(head(h) / cap)."""

    def __init__(self, head: nn.Module, cap: float) -> None:
        super().__init__()
        self.head, self.cap = head, cap

    @property
    def weight(self) -> torch.Tensor:
        return self.head.get_parameter("weight")

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.cap * torch.tanh(self.head(hidden) / self.cap)


class Gemma2Adapter(RotaryAdapter):
    name = "gemma2"
    model_types = ("gemma2",)
    masks_by_layer_type = True  # its forward takes {layer type: mask}
    layout = replace(
        DECODER_LAYOUT,
        attention_out="post_attention_layernorm",
        attention_post_norm="post_attention_layernorm",
        mlp_norm="pre_feedforward_layernorm",
        mlp_out="post_feedforward_layernorm",
        mlp_post_norm="post_feedforward_layernorm",
    )

    def lm_head(self, model: PreTrainedModel) -> nn.Module:
        """The LM head followed by the final logit soft-capping (a view when capped)."""
        head = model.get_output_embeddings()
        cap = getattr(model.config, "final_logit_softcapping", None)
        return head if cap is None else SoftcappedHead(head, float(cap))

    def config_kwargs(self, shape: ModelShape) -> dict[str, Any]:
        return {
            **super().config_kwargs(shape),
            "head_dim": shape.head_dim,
            "query_pre_attn_scalar": shape.head_dim,
        }


class Gemma3Adapter(Gemma2Adapter):
    """Gemma 3 (text): Gemma 2's places, q/k RMS norms, embeddings scaled inside the
    embedding module, and two RoPE tables: ``rope_local_base_freq`` on the sliding-window
    layers and ``rope_theta`` on the global ones (``layer_types`` says which; every sixth
    layer is global by default). :meth:`layer_masks` reads the same ``layer_types``, so
    the position-resolved kernel gets each layer's window."""

    name = "gemma3"
    model_types = ("gemma3_text",)

    def config_kwargs(self, shape: ModelShape) -> dict[str, Any]:
        kwargs = super().config_kwargs(shape)
        theta = kwargs.pop("rope_parameters")["rope_theta"]
        kwargs["rope_parameters"] = {
            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
            "full_attention": {"rope_type": "default", "rope_theta": theta},
        }
        return kwargs
