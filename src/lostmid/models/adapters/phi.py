"""Phi (1, 1.5, 2): ``model.embed_tokens`` -> ``model.layers[l]`` -> ``model.final_layernorm``.

Parallel blocks sharing one norm: out = x + Attn(ln(x)) + MLP(ln(x)) with ln the
layer's ``input_layernorm`` (so :meth:`mlp_norm` is None). Partial rotary embeddings
(``rotary_emb``); separate ``q_proj``/``k_proj`` with biases, and optional q/k
LayerNorms.
"""

from __future__ import annotations

from dataclasses import replace

from torch import nn

from lostmid.models.adapters.rotary import DECODER_LAYOUT, RotaryAdapter


class PhiAdapter(RotaryAdapter):
    name = "phi"
    model_types = ("phi",)
    layout = replace(DECODER_LAYOUT, final_norm="final_layernorm", mlp_norm=None)
    partial_rotary = 0.5
    dropout = ("resid_pdrop", "embd_pdrop", "attention_dropout")

    def parallel_residual(self, block: nn.Module) -> bool:
        return True
