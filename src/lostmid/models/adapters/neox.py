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

from dataclasses import replace

import torch
from torch import nn

from lostmid.models.adapters.rotary import DECODER_LAYOUT, RotaryAdapter


def fused_per_head_query_key(linear: nn.Module, heads: int) -> list[torch.Tensor]:
    """Views of the q and k rows of a per-head fused (heads, 3, head_dim) QKV projection
    (a linear layer, with or without a bias)."""
    full = linear.get_parameter("weight")
    d_in = full.shape[1]
    weight = full.view(heads, 3, -1, d_in)[:, :2]  # (heads, 2, head_dim, d_in)
    found = [weight]
    bias = getattr(linear, "bias", None)
    if bias is not None:
        found.append(bias.view(heads, 3, -1)[:, :2])  # (heads, 2, head_dim)
    return found


class GPTNeoXAdapter(RotaryAdapter):
    name = "gpt-neox"
    model_types = ("gpt_neox",)
    layout = replace(
        DECODER_LAYOUT, base="gpt_neox", final_norm="final_layer_norm", attention="attention"
    )
    partial_rotary = 0.25
    grouped_query = False
    dropout = ("hidden_dropout", "attention_dropout")

    def parallel_residual(self, block: nn.Module) -> bool:
        return bool(block.use_parallel_residual)

    def query_key(self, block: nn.Module) -> list[torch.Tensor]:
        attn = self.attention(block)
        heads = int(self._get(attn, "config.num_attention_heads"))
        return fused_per_head_query_key(attn.get_submodule("query_key_value"), heads)
