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

from typing import Any

import torch
from torch import nn

from lostmid.models.adapters.layout import Layout, LayoutAdapter
from lostmid.models.shape import ModelShape


class LlamaStyleAdapter(LayoutAdapter):
    name = "llama-style"
    model_types = ("llama", "qwen2", "qwen3", "mistral")
    has_rope = True
    layout = Layout(
        base="model",
        blocks="layers",
        final_norm="norm",
        attention="self_attn",
        attention_norm="input_layernorm",
        mlp="mlp",
        mlp_norm="post_attention_layernorm",
        rotary="rotary_emb",
    )

    def config_kwargs(self, shape: ModelShape) -> dict[str, Any]:
        return {
            "vocab_size": shape.vocab_size,
            "hidden_size": shape.hidden,
            "intermediate_size": shape.mlp_width,
            "num_hidden_layers": shape.layers,
            "num_attention_heads": shape.heads,
            "num_key_value_heads": shape.kv_heads or shape.heads,
            "max_position_embeddings": shape.context,
            "rope_parameters": {"rope_type": "default", "rope_theta": shape.rope_theta},
            "tie_word_embeddings": shape.tie_embeddings,
        }


class SoftcappedHead(nn.Module):
    """Logits soft-capped as Gemma2 does after its LM head: cap * tanh(head(h) / cap)."""

    def __init__(self, head: nn.Module, cap: float) -> None:
        super().__init__()
        self.head, self.cap = head, cap

    @property
    def weight(self) -> torch.Tensor:
        return self.head.weight

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.cap * torch.tanh(self.head(hidden) / self.cap)


class Gemma2Adapter(LlamaStyleAdapter):
    name = "gemma2"
    model_types = ("gemma2",)
    layout = Layout(
        base="model",
        blocks="layers",
        final_norm="norm",
        attention="self_attn",
        attention_norm="input_layernorm",
        attention_out="post_attention_layernorm",
        attention_post_norm="post_attention_layernorm",
        mlp="mlp",
        mlp_norm="pre_feedforward_layernorm",
        mlp_out="post_feedforward_layernorm",
        mlp_post_norm="post_feedforward_layernorm",
        rotary="rotary_emb",
    )

    def lm_head(self, model: nn.Module) -> nn.Module:
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
