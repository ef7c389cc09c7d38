"""OPT: ``model.decoder.embed_tokens`` + ``embed_positions`` -> ``model.decoder.layers[l]``
-> ``model.decoder.final_layer_norm``.

Each layer is ``self_attn_layer_norm`` -> ``self_attn`` and ``final_layer_norm`` (the
layer's MLP pre-norm, despite its name) -> ``fc1`` -> activation -> ``fc2``: the MLP is
inlined in the layer, so :meth:`mlp` is a view and ``fc2`` is the MLP's output. Learned
absolute positions (a table offset by 2). OPT-350m puts its norms after the residual
addition (``do_layer_norm_before=False``) and is not served.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from lostmid.models.adapters.layout import Layout, LayoutAdapter
from lostmid.models.shape import ModelShape


class InlineMLP(nn.Module):
    """fc2(act(fc1(h))): the MLP of a layer that calls its parts inline (not in the tree)."""

    def __init__(self, fc1: nn.Module, activation: Any, fc2: nn.Module) -> None:
        super().__init__()
        self.fc1, self.fc2 = fc1, fc2
        self.activation = activation

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.activation(self.fc1(hidden)))


class OPTAdapter(LayoutAdapter):
    name = "opt"
    model_types = ("opt",)
    has_position_embedding = True
    dropout = ("dropout", "attention_dropout")
    layout = Layout(
        base="model.decoder",
        blocks="layers",
        final_norm="final_layer_norm",
        attention="self_attn",
        attention_norm="self_attn_layer_norm",
        mlp="fc1",  # the entry of the inlined MLP; see mlp()
        mlp_norm="final_layer_norm",
        mlp_out="fc2",
        position_embedding="embed_positions",
    )

    def unsupported(self, config: Any) -> str | None:
        if not getattr(config, "do_layer_norm_before", True):
            return "opt with do_layer_norm_before=False (post-norm, e.g. opt-350m) is not served"
        if getattr(config, "word_embed_proj_dim", config.hidden_size) != config.hidden_size:
            return (
                "opt with word_embed_proj_dim != hidden_size (projected embeddings) is not served"
            )
        return None

    def mlp(self, block: nn.Module) -> nn.Module:
        fc1, fc2 = block.get_submodule("fc1"), block.get_submodule("fc2")
        return InlineMLP(fc1, block.activation_fn, fc2)

    def config_kwargs(self, shape: ModelShape) -> dict[str, Any]:
        return {
            "vocab_size": shape.vocab_size,
            "hidden_size": shape.hidden,
            "word_embed_proj_dim": shape.hidden,
            "ffn_dim": shape.mlp_width,
            "num_hidden_layers": shape.layers,
            "num_attention_heads": shape.heads,
            "max_position_embeddings": shape.context,
        }
