"""GPT-2: ``transformer.wte`` + ``transformer.wpe`` -> ``transformer.h[l]`` (``.attn``)
-> ``transformer.ln_f``; learned absolute positions, no rotary."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.models.adapters.base import FamilyAdapter


class GPT2Adapter(FamilyAdapter):
    name = "gpt2"
    model_types = ("gpt2",)
    has_rope = False
    has_position_embedding = True

    def base(self, model: nn.Module) -> nn.Module:
        return model.transformer

    def blocks(self, model: nn.Module) -> Sequence[nn.Module]:
        return list(model.transformer.h)

    def attention(self, block: nn.Module) -> nn.Module:
        return block.attn

    def final_norm(self, model: nn.Module) -> nn.Module:
        return model.transformer.ln_f

    def remove_rope(self, model: nn.Module) -> None:
        raise UserError(
            "gpt2 has no rotary embeddings to remove (it uses learned absolute "
            "positions); use --no-pos-emb instead of --no-rope"
        )

    def remove_position_embedding(self, model: nn.Module) -> None:
        # Zeroing the table makes the block input x_j + p_j = x_j at every position.
        with torch.no_grad():
            model.transformer.wpe.weight.zero_()
