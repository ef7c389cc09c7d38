"""Decoders with rotary embeddings and Hugging Face's standard config names.

Llama-style models, Gemma2, Phi and GPT-NeoX put their places at the same paths
(:data:`DECODER_LAYOUT`, changed where a family differs) and take a model shape through
the same config keys (``hidden_size``, ``intermediate_size``, ``num_hidden_layers``,
``rope_parameters``, ...). Their adapters subclass :class:`RotaryAdapter` and state only
what differs: paths, the fraction of each head that rotates, whether the config takes
key/value heads, the dropout keys.
"""

from __future__ import annotations

from typing import Any

from lostmid.models.adapters.layout import Layout, LayoutAdapter
from lostmid.models.shape import ModelShape

DECODER_LAYOUT = Layout(
    base="model",
    blocks="layers",
    final_norm="norm",
    attention="self_attn",
    attention_norm="input_layernorm",
    mlp="mlp",
    mlp_norm="post_attention_layernorm",
    rotary="rotary_emb",
)
"""``model.embed_tokens`` -> ``model.layers[l]`` (``input_layernorm`` -> ``self_attn``,
``post_attention_layernorm`` -> ``mlp``) -> ``model.norm``, rotary in ``model.rotary_emb``."""


class RotaryAdapter(LayoutAdapter):
    """A rotary decoder family; subclasses set ``name``, ``model_types`` and what differs."""

    has_rope = True
    layout = DECODER_LAYOUT
    partial_rotary: float | None = None
    """The fraction of each head's dimensions that rotate (None: all of them)."""
    grouped_query = True
    """Whether the config takes ``num_key_value_heads`` (grouped-query attention)."""

    def config_kwargs(self, shape: ModelShape) -> dict[str, Any]:
        rope: dict[str, Any] = {"rope_type": "default", "rope_theta": shape.rope_theta}
        if self.partial_rotary is not None:
            rope["partial_rotary_factor"] = self.partial_rotary
        kwargs: dict[str, Any] = {
            "vocab_size": shape.vocab_size,
            "hidden_size": shape.hidden,
            "intermediate_size": shape.mlp_width,
            "num_hidden_layers": shape.layers,
            "num_attention_heads": shape.heads,
            "max_position_embeddings": shape.context,
            "rope_parameters": rope,
        }
        if self.grouped_query:
            kwargs["num_key_value_heads"] = shape.kv_heads or shape.heads
        return kwargs
