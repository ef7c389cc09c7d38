"""BLOOM: ``transformer.word_embeddings`` -> ``word_embeddings_layernorm`` ->
``transformer.h[l]`` -> ``transformer.ln_f``; ALiBi position biases, no position table.

A layer is ``input_layernorm`` -> ``self_attention`` and ``post_attention_layernorm`` ->
``mlp``, but both modules add the residual themselves (their output is x + branch), so
the branch outputs are their ``dense`` / ``dense_4h_to_h`` projections and :meth:`mlp`
is a view that passes a zero residual. ALiBi adds -m_h (i - j) to the scores of head h
(built once per forward as m_h j, a per-row constant away from it); :meth:`remove_alibi`
makes that bias zero in every layer. Queries, keys and values come from one fused
``query_key_value`` grouped per head as (heads, [q | k | v], head_dim).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.models.adapters.layout import Layout, LayoutAdapter
from lostmid.models.adapters.neox import fused_per_head_query_key
from lostmid.models.shape import ModelShape

if TYPE_CHECKING:
    from transformers import PreTrainedModel


class ResidualFreeMLP(nn.Module):
    """BLOOM's MLP without the residual it adds: h -> mlp(h, 0)."""

    def __init__(self, mlp: nn.Module) -> None:
        super().__init__()
        self.inner = mlp

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.inner(hidden, torch.zeros_like(hidden))


def _zero_alibi(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    kwargs["alibi"] = torch.zeros_like(kwargs["alibi"])  # (B * heads, 1, L)
    return args, kwargs


class BloomAdapter(LayoutAdapter):
    name = "bloom"
    model_types = ("bloom",)
    has_alibi = True
    dropout = ("hidden_dropout", "attention_dropout")
    layout = Layout(
        base="transformer",
        blocks="h",
        final_norm="ln_f",
        attention="self_attention",
        attention_norm="input_layernorm",
        attention_out="self_attention.dense",
        mlp="mlp",
        mlp_norm="post_attention_layernorm",
        mlp_out="mlp.dense_4h_to_h",
    )

    def unsupported(self, config: Any) -> str | None:
        if getattr(config, "apply_residual_connection_post_layernorm", False):
            return "bloom with apply_residual_connection_post_layernorm=True is not served"
        if getattr(config, "pretraining_tp", 1) > 1 and getattr(config, "slow_but_exact", False):
            return "bloom with slow_but_exact tensor-parallel projections is not served"
        return None

    def mlp(self, block: nn.Module) -> nn.Module:
        return ResidualFreeMLP(block.get_submodule("mlp"))

    def query_key(self, block: nn.Module) -> list[torch.Tensor]:
        attn = self.attention(block)
        heads = int(self._get(attn, "num_heads"))
        return fused_per_head_query_key(attn.get_submodule("query_key_value"), heads)

    def remove_alibi(self, model: PreTrainedModel) -> None:
        for block in self.blocks(model):
            attn = self.attention(block)
            if not getattr(attn, "_lostmid_no_alibi", False):
                attn.register_forward_pre_hook(_zero_alibi, with_kwargs=True)
                # torch types Module.__setattr__ for tensors and modules only
                attn._lostmid_no_alibi = True  # type: ignore[assignment]

    def config_kwargs(self, shape: ModelShape) -> dict[str, Any]:
        if shape.intermediate not in (None, 4 * shape.hidden):
            raise UserError(
                f"bloom's MLP width is 4 x hidden = {4 * shape.hidden}; "
                f"model.intermediate {shape.intermediate} cannot be built"
            )
        return {
            "vocab_size": shape.vocab_size,
            "hidden_size": shape.hidden,
            "n_layer": shape.layers,
            "n_head": shape.heads,
        }
