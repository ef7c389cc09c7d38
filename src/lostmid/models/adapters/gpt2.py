"""GPT-2: ``transformer.wte`` + ``transformer.wpe`` -> ``transformer.h[l]``
(``ln_1`` -> ``attn``, ``ln_2`` -> ``mlp``) -> ``transformer.ln_f``; learned absolute
positions; queries, keys and values from one fused ``c_attn`` (Conv1D, x W with W of
shape (d, 3d), columns [q | k | v])."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lostmid.models.adapters.layout import Layout, LayoutAdapter
from lostmid.models.shape import ModelShape


class GPT2Adapter(LayoutAdapter):
    name = "gpt2"
    model_types = ("gpt2",)
    has_position_embedding = True
    dropout = ("resid_pdrop", "embd_pdrop", "attn_pdrop")
    layout = Layout(
        base="transformer",
        blocks="h",
        final_norm="ln_f",
        attention="attn",
        attention_norm="ln_1",
        mlp="mlp",
        mlp_norm="ln_2",
        position_embedding="wpe",
    )

    def query_key(self, block: nn.Module) -> list[torch.Tensor]:
        attn = self.attention(block)
        weight, bias = attn.get_parameter("c_attn.weight"), attn.get_parameter("c_attn.bias")
        d = weight.shape[0]
        return [weight[:, : 2 * d], bias[: 2 * d]]  # (d, 2d) and (2d,) views

    def config_kwargs(self, shape: ModelShape) -> dict[str, Any]:
        return {
            "vocab_size": shape.vocab_size,
            "n_positions": shape.context,
            "n_embd": shape.hidden,
            "n_layer": shape.layers,
            "n_head": shape.heads,
            "n_inner": shape.intermediate,
            "bos_token_id": None,
            "eos_token_id": None,
        }
