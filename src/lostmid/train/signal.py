"""The per-position learning signal and the theory's effective learning rate rho_H.

Learning signal. For a window of T input tokens with embeddings e_1 .. e_T (the output
of the token-embedding layer, 1-indexed positions) and the next-token loss at the last
position, ell_T = -log p(x_{T+1} | x_1 .. x_T), the learning signal of position j is

    eta_j = E_batch || d ell_T / d e_j ||_2 ,

the Euclidean norm over the embedding dimension of the gradient that the last
position's loss sends back to position j, averaged over the windows of a few training
batches. It is the size of the update the last position's loss makes to whatever
produced position j's input, the paper's "effective learning rate" at x = j/T.

Theory. The paper predicts eta(x) ~ rho_H(x), x = j/T, with

    rho_H(x) = b_0 delta(1 - x) + sum_{k=1..H} b_k (ln 1/x)^(k-1) / (k-1)!,
    b_k = C(H, k) a^k (1 - a)^(H - k),

a the residual strength (here the mean over layers of the measured strengths). On T
positions we compare with the mass rho_H puts in each cell ((j-1)/T, j/T]: since
int_0^y (ln 1/x)^(k-1)/(k-1)! dx = Q(k, ln 1/y) (Q the regularised upper incomplete
gamma function),

    m_j = b_0 [j = T] + sum_k b_k [Q(k, ln(T/j)) - Q(k, ln(T/(j-1)))],

which sums to 1 exactly (Q(k, inf) = 0, Q(k, 0) = 1).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from lostmid.errors import UserError
from lostmid.theory.continuum import continuum_row

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def learning_signal(
    model: PreTrainedModel, batches: Iterable[torch.Tensor]
) -> tuple[np.ndarray, float]:
    """eta_j for j = 1..T (array index j-1), and the mean training loss of the same batches.

    Args:
        model: a causal LM with ``get_input_embeddings()`` whose forward accepts
            ``inputs_embeds`` and returns an object with ``.logits`` (B, T, V).
        batches: LongTensors (B, T + 1); inputs ``[:, :-1]``, targets ``[:, 1:]``.

    Returns:
        (eta, loss): eta (T,) float64, the per-window gradient norm averaged over all
        windows of all batches; loss, the mean next-token loss over all positions.

    The model's weights get no gradient: only the embeddings are differentiated.
    """
    total: torch.Tensor | None = None
    windows = 0
    loss_sum = 0.0
    tokens = 0
    embed = model.get_input_embeddings()
    was_training = model.training
    model.eval()
    try:
        for batch in batches:
            batch = batch.to(embed.get_parameter("weight").device)
            inputs, targets = batch[:, :-1], batch[:, 1:]  # (B, T)
            emb = embed(inputs).detach().requires_grad_(True)  # (B, T, d)
            logits = model(inputs_embeds=emb).logits  # (B, T, V)
            last = F.cross_entropy(logits[:, -1].float(), targets[:, -1], reduction="sum")
            (grad,) = torch.autograd.grad(last, emb)  # (B, T, d); windows are independent
            norms = grad.float().norm(dim=-1).sum(dim=0)  # (T,) summed over windows
            total = norms if total is None else total + norms
            windows += inputs.shape[0]
            with torch.no_grad():
                full = F.cross_entropy(
                    logits.flatten(0, 1).float(), targets.flatten(), reduction="sum"
                )
            loss_sum += float(full)
            tokens += targets.numel()
    finally:
        model.train(was_training)
    if total is None:
        raise UserError("the learning signal needs at least one batch")
    return (total / windows).double().cpu().numpy(), loss_sum / tokens


def rho_cell_masses(length: int, layers: int, alpha: float) -> np.ndarray:
    """m_j, j = 1..T: the mass of rho_H in cell ((j-1)/T, j/T] (see the module docstring).

    The same numbers as ``lostmid.theory.continuum.continuum_row(T, H, a)``.

    >>> m = rho_cell_masses(128, 8, 0.3)
    >>> round(float(m.sum()), 12), bool(m[0] > m[63])
    (1.0, True)
    """
    return continuum_row(length, layers, alpha, kernel="rollout")
