"""GPT-NeoX / Pythia: ``gpt_neox.embed_in`` -> ``gpt_neox.layers[l]`` ->
``gpt_neox.final_layer_norm``.

Each layer has its own norm per branch (``input_layernorm`` -> ``attention``,
``post_attention_layernorm`` -> ``mlp``) and is parallel when
``use_parallel_residual`` (Pythia): out = x + Attn(ln1(x)) + MLP(ln2(x)). Partial
rotary embeddings (``rotary_emb``, a fraction of each head); queries, keys and values
come from one fused ``query_key_value`` whose rows are grouped per head as
(heads, [q | k | v], head_dim).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lostmid.models.adapters.layout import Layout, LayoutAdapter
from lostmid.models.shape import ModelShape


def fused_per_head_query_key(linear: nn.Linear, heads: int) -> list[torch.Tensor]:
    """Views of the q and k rows of a per-head fused (heads, 3, head_dim) QKV projection."""
    d_in = linear.weight.shape[1]
    weight = linear.weight.view(heads, 3, -1, d_in)[:, :2]  # (heads, 2, head_dim, d_in)
    found = [weight]
    if linear.bias is not None:
        found.append(linear.bias.view(heads, 3, -1)[:, :2])  # (heads, 2, head_dim)
    return found


class GPTNeoXAdapter(LayoutAdapter):
    name = "gpt-neox"
    model_types = ("gpt_neox",)
    has_rope = True
    layout = Layout(
        base="gpt_neox",
        blocks="layers",
        final_norm="final_layer_norm",
        attention="attention",
        attention_norm="input_layernorm",
        mlp="mlp",
        mlp_norm="post_attention_layernorm",
        rotary="rotary_emb",
    )

    def parallel_residual(self, block: nn.Module) -> bool:
        return bool(block.use_parallel_residual)

    def query_key(self, block: nn.Module) -> list[torch.Tensor]:
        attn = self.attention(block)
        return fused_per_head_query_key(attn.query_key_value, attn.config.num_attention_heads)

    def config_kwargs(self, shape: ModelShape) -> dict[str, Any]:
        return {
            "vocab_size": shape.vocab_size,
            "hidden_size": shape.hidden,
            "intermediate_size": shape.mlp_width,
            "num_hidden_layers": shape.layers,
            "num_attention_heads": shape.heads,
            "max_position_embeddings": shape.context,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": shape.rope_theta,
                "partial_rotary_factor": 0.25,
            },
            "hidden_dropout": 0.0,
            "attention_dropout": 0.0,
            "tie_word_embeddings": shape.tie_embeddings,
        }
