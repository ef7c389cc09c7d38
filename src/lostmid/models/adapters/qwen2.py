"""Qwen2-style decoders (also Llama, Mistral, Qwen3: same module names).

``model.model.embed_tokens`` -> ``model.model.layers[l]`` (``.self_attn``) ->
``model.model.norm``; rotary embeddings in ``model.model.rotary_emb``, shared by all
layers and returning ``(cos, sin)`` of shape (B, L, head_dim).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.models.adapters.base import FamilyAdapter


class IdentityRotary(nn.Module):
    """Rotary embedding switched off: cos = 1, sin = 0, so q R = q and k R = k."""

    def __init__(self, head_dim: int) -> None:
        super().__init__()
        self.head_dim = head_dim

    def forward(
        self, x: torch.Tensor, position_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        shape = (*position_ids.shape, self.head_dim)  # (B or 1, L, head_dim)
        cos = torch.ones(shape, dtype=x.dtype, device=x.device)
        return cos, torch.zeros_like(cos)


class Qwen2Adapter(FamilyAdapter):
    name = "qwen2"
    model_types = ("qwen2", "llama", "mistral", "qwen3")
    has_rope = True
    has_position_embedding = False

    def base(self, model: nn.Module) -> nn.Module:
        return model.model

    def blocks(self, model: nn.Module) -> Sequence[nn.Module]:
        return list(model.model.layers)

    def attention(self, block: nn.Module) -> nn.Module:
        return block.self_attn

    def final_norm(self, model: nn.Module) -> nn.Module:
        return model.model.norm

    def remove_rope(self, model: nn.Module) -> None:
        config = model.config
        head_dim = getattr(config, "head_dim", None) or (
            config.hidden_size // config.num_attention_heads
        )
        model.model.rotary_emb = IdentityRotary(head_dim)

    def remove_position_embedding(self, model: nn.Module) -> None:
        raise UserError(
            f"{model.config.model_type} has no learned position embeddings to remove "
            "(it uses rotary embeddings); use --no-rope instead of --no-pos-emb"
        )
