"""A rollout through a model's *measured* attention (the peer project's residual-aware
rollout, with the theory's Jacobian a_l): what topology and the learnt attention pattern
explain of a profile, with no MLP, norm or value-matrix factor.

Per layer l, with A_l the attention matrix averaged over heads (rows sum to 1, causal)
and a_l the residual strength: R_l = (1 - a_l) I + a_l A_l. The influence of position j
on the target t is row t of R_H ... R_1, computed right to left as a row vector:
v <- v R_l for l = H..1, starting from the unit vector at t. With every A_l the Cesàro
matrix this is the paper's uniform theory (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from lostmid.errors import UserError
from lostmid.models.attention import attention_kernel
from lostmid.typing import Float

if TYPE_CHECKING:
    from lostmid.models import LoadedModel


def rollout_row(
    attentions: Sequence[Float[np.ndarray, "L L"]], strengths: Sequence[float], target: int
) -> Float[np.ndarray, " L"]:
    """Row ``target`` (1-indexed) of R_H ... R_1, R_l = (1 - a_l) I + a_l A_l, layer 1 first.

    >>> A = np.tril(np.ones((3, 3))) / np.arange(1, 4)[:, None]  # uniform causal attention
    >>> rollout_row([A], [1.0], 3).round(3).tolist()
    [0.333, 0.333, 0.333]
    """
    if len(attentions) != len(strengths) or not attentions:
        raise UserError(f"{len(attentions)} attention matrices for {len(strengths)} strengths")
    length = attentions[0].shape[0]
    v = np.zeros(length)
    v[target - 1] = 1.0
    for a_l, attention in zip(reversed(list(strengths)), reversed(list(attentions)), strict=True):
        v = (1.0 - a_l) * v + a_l * (v @ np.asarray(attention, dtype=np.float64))
    return v


def measured_attention(
    loaded: LoadedModel, input_ids: torch.Tensor
) -> list[Float[np.ndarray, "L L"]]:
    """Each layer's attention, averaged over heads and over the inputs (B, L), layer 1 first.

    Runs the model's blocks (not its output head: no logits are read) with
    ``output_attentions`` (the eager kernel materialises the weights).
    """
    model = loaded.model
    base = loaded.adapter.base(model)
    # the weights exist only in eager attention
    with torch.no_grad(), attention_kernel(model, "eager"):
        ids = input_ids.to(loaded.input_device)
        out = base(input_ids=ids, output_attentions=True, use_cache=False)
    if not out.attentions or out.attentions[0] is None:
        raise UserError(f"{loaded.spec}: the model returns no attention weights")
    return [a.float().mean(dim=(0, 1)).cpu().numpy() for a in out.attentions]  # (L, L)
