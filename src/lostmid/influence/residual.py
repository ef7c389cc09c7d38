"""Residual strength per layer: how strong the attention branch is against the stream.

The peer project's (Herasimchyk et al.) estimator, per layer l (1-indexed):

    lambda_l = mean over tokens and samples of ||a_l|| / (||x_l|| + ||a_l||),

with x_l the block input (the residual stream entering layer l) and a_l the output of
its attention branch (after the output projection, before the residual add). The
ratio is taken per token, then averaged over all positions and samples. It is the
theory's a_l in N_l = (1 - a_l) I + a_l M when the attention branch is the only mixer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from lostmid.errors import UserError
from lostmid.models import LoadedModel


def residual_strength(
    loaded: LoadedModel, input_ids: torch.LongTensor, *, batch_size: int = 1
) -> np.ndarray:
    """lambda_l = mean ||a_l|| / (||x_l|| + ||a_l||) for each layer l = 1..H; shape (H,).

    >>> from lostmid.models import load_model
    >>> from lostmid.influence import random_token_ids
    >>> lam = residual_strength(load_model("tiny-gpt2"), random_token_ids(256, 2, 8, 0))
    >>> lam.shape, bool(((lam > 0) & (lam < 1)).all())
    ((2,), True)
    """
    if input_ids.ndim != 2 or input_ids.shape[0] < 1:
        raise UserError("input_ids must be a non-empty (samples, length) tensor")
    if input_ids.shape[1] > loaded.max_length:
        raise UserError(
            f"--length {input_ids.shape[1]} exceeds the maximum {loaded.max_length} of "
            f"{loaded.spec}"
        )
    model, adapter = loaded.model, loaded.adapter
    blocks = adapter.blocks(model)
    device = next(model.parameters()).device
    sums = np.zeros(len(blocks))
    count = 0
    block_inputs: dict[int, torch.Tensor] = {}
    ratios: dict[int, torch.Tensor] = {}
    handles: list[Any] = []

    def keep_input(index: int, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        block_inputs[index] = args[0] if args else kwargs["hidden_states"]  # (B, L, d)

    def keep_ratio(index: int, module: torch.nn.Module, args: tuple, output: Any) -> None:
        a = output[0] if isinstance(output, tuple) else output  # (B, L, d)
        wide = torch.promote_types(a.dtype, torch.float32)  # float32 at least, float64 kept
        a, x = a.to(wide), block_inputs[index].to(wide)
        a_norm, x_norm = a.norm(dim=-1), x.norm(dim=-1)  # (B, L)
        ratios[index] = (a_norm / (x_norm + a_norm).clamp_min(1e-30)).double().sum()

    try:
        for index, block in enumerate(blocks):
            handles.append(
                block.register_forward_pre_hook(
                    lambda m, a, k, i=index: keep_input(i, m, a, k), with_kwargs=True
                )
            )
            handles.append(
                adapter.attention(block).register_forward_hook(
                    lambda m, a, o, i=index: keep_ratio(i, m, a, o)
                )
            )
        embed = adapter.token_embedding(model)
        with torch.no_grad():
            for lo in range(0, input_ids.shape[0], batch_size):
                ids = input_ids[lo : lo + batch_size].to(device)  # (B, L)
                adapter.base(model)(inputs_embeds=embed(ids), use_cache=False)
                sums += np.array([float(ratios[i]) for i in range(len(blocks))])
                count += ids.numel()
    finally:
        for handle in handles:
            handle.remove()
    return sums / count
