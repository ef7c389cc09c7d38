"""Phi (1, 1.5, 2): ``model.embed_tokens`` -> ``model.layers[l]`` -> ``model.final_layernorm``.

Parallel blocks sharing one norm: out = x + Attn(ln(x)) + MLP(ln(x)) with ln the
layer's ``input_layernorm`` (so :meth:`mlp_norm` is None). Partial rotary embeddings
(``rotary_emb``); separate ``q_proj``/``k_proj`` with biases, and optional q/k
LayerNorms.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from lostmid.models.adapters.layout import Layout, LayoutAdapter
from lostmid.models.shape import ModelShape


class PhiAdapter(LayoutAdapter):
    name = "phi"
    model_types = ("phi",)
    has_rope = True
    layout = Layout(
        base="model",
        blocks="layers",
        final_norm="final_layernorm",
        attention="self_attn",
        attention_norm="input_layernorm",
        mlp="mlp",
        mlp_norm=None,
        rotary="rotary_emb",
    )

    def parallel_residual(self, block: nn.Module) -> bool:
        return True

    def config_kwargs(self, shape: ModelShape) -> dict[str, Any]:
        return {
            "vocab_size": shape.vocab_size,
            "hidden_size": shape.hidden,
            "intermediate_size": shape.mlp_width,
            "num_hidden_layers": shape.layers,
            "num_attention_heads": shape.heads,
            "num_key_value_heads": shape.kv_heads or shape.heads,
            "max_position_embeddings": shape.context,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": shape.rope_theta,
                "partial_rotary_factor": 0.5,
            },
            "resid_pdrop": 0.0,
            "embd_pdrop": 0.0,
            "attention_dropout": 0.0,
            "tie_word_embeddings": shape.tie_embeddings,
        }
