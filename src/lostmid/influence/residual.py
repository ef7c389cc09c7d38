"""Residual strength per layer: the weight a_l of the attention branch in layer l.

The theory's layer operator is N_l = (1 - a_l) I + a_l A W_l (A the attention matrix,
W_l a random map with E[W W^T] = I in the jacobian kernel). Two estimators of a_l:

``method="jacobian"`` (what the theory means). For a pre-norm block
x -> x + Attn(LN(x)) the Jacobian is, position by position,

    d y_i / d x_j = delta_ij I + A_ij J_j,      J_j = W_O W_V dLN(x_j),

(plus the small terms through the attention weights). The residual path has gain 1
and the branch has gain s_l = ||J_j||_F / sqrt(d) per unit of attention weight
(:func:`lostmid.influence.gains.branch_gains`; averaged over positions and inputs).
With J_j ~ s_l W_l,

    I + s A W = (1 + s) [ (1 - a) I + a A W ]      exactly when  a = s / (1 + s),

and the factor (1 + s) is one global scale that normalised profiles do not see. So
a_l = s_l / (1 + s_l). At depth 1 the theory is exact: the spike over the mean of the
layer-1 profile at target t is t (1 - a) / a = t / s.

``method="forward"`` (the peer project's, Herasimchyk et al.). Per layer,

    lambda_l = mean over tokens and samples of ||a_l|| / (||x_l|| + ||a_l||),

with x_l the block input and a_l the attention branch's output (the adapter's
``attention_out``: after the output projection and any branch post-norm, before the
residual add), a ratio of activations, not of Jacobians. At
position i the branch averages i nearly independent values v_j = W_O W_V LN(x_j),
each of norm ~ s ||x||, so ||a_i|| ~ s ||x|| / sqrt(i): the ratio shrinks like
1/sqrt(i) and its mean over i = 1..L is about 2 s / sqrt(L), far below s / (1 + s) for
long inputs. A perturbation of the stream, in contrast, moves every value in the same
direction, and its average does not shrink.

At depth 1, where the theory is exact, the branch gain predicts the measured spike and
the forward ratio overshoots it by an order of magnitude (docs/BENCHMARKS.md, "depth 1",
``benchmarks/bench_depth1.py``); what is left of GPT-2's gap comes from the attention
logits (non-uniform weights and the query/key path), which the value-path gain leaves
out: with W_Q = W_K = 0 it closes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from lostmid.checks import check_choice
from lostmid.errors import UserError
from lostmid.influence.config import STRENGTHS
from lostmid.influence.gain_passes import BlockCall, record_calls
from lostmid.influence.gains import BranchGains, branch_gains
from lostmid.influence.inputs import check_fits_model
from lostmid.influence.passes import at_least_float32
from lostmid.models import LoadedModel
from lostmid.typing import Float, Int

METHODS = STRENGTHS  # jacobian | forward, the choices of ``lostmid measure --strength``


def residual_strength(
    loaded: LoadedModel,
    input_ids: Int[torch.Tensor, "B L"],
    *,
    batch_size: int = 1,
    method: str = "jacobian",
    directions: int = 4,
    seed: int = 0,
) -> Float[np.ndarray, " H"]:
    """Residual strength a_l of each layer l = 1..H; shape (H,).

    The theory's a_l (module docstring) unless ``method`` names the peer's estimator.
    Every caller that builds rho_H or a theory prediction uses the default; the forward
    ratio is for comparison only, and is reached by name (``method="forward"`` or
    :func:`forward_ratio`).

    Args:
        method: ``jacobian`` (s_l / (1 + s_l) from
            :func:`lostmid.influence.gains.branch_gains`; the theory's quantity) or
            ``forward`` (the peer's ratio lambda_l = mean ||a_l|| / (||x_l|| + ||a_l||)).
        directions, seed: random directions of ``jacobian`` (unused by ``forward``).

    >>> from lostmid.models import load_model
    >>> from lostmid.influence import random_token_ids
    >>> a = residual_strength(load_model("tiny-gpt2"), random_token_ids(256, 2, 8, 0))
    >>> a.shape, bool(((a > 0) & (a < 1)).all())
    ((2,), True)
    """
    check_choice("residual strength method", method, METHODS)
    if method == "forward":
        return forward_ratio(loaded, input_ids, batch_size=batch_size)
    gains = branch_gains(
        loaded,
        input_ids,
        directions=directions,
        seed=seed,
        per_position=False,
        batch_size=batch_size,
    )
    return gains.residual_strength


class RatioSums:
    """The forward ratio's running sums over recorded block calls (one home for
    :func:`forward_ratio` and :func:`gains_and_forward_ratio`)."""

    def __init__(self, layers: int) -> None:
        self.sums = np.zeros(layers)
        self.tokens = 0

    def add(self, calls: Sequence[BlockCall]) -> None:
        """One batch's calls, as :func:`~lostmid.influence.gain_passes.record_calls`
        keeps them: x_l the block input, a_l the attention branch's output."""
        for index, call in enumerate(calls):
            x = at_least_float32(call.hidden)  # (B, L, d)
            assert call.attention_output is not None
            a = at_least_float32(call.attention_output).reshape(x.shape)  # OPT: (B L, d)
            a_norm, x_norm = a.norm(dim=-1), x.norm(dim=-1)  # (B, L)
            self.sums[index] += float((a_norm / (x_norm + a_norm).clamp_min(1e-30)).double().sum())
        self.tokens += calls[0].hidden.shape[0] * calls[0].hidden.shape[1] if calls else 0

    def value(self) -> Float[np.ndarray, " H"]:
        return self.sums / self.tokens


def forward_ratio(
    loaded: LoadedModel, input_ids: Int[torch.Tensor, "B L"], *, batch_size: int = 1
) -> Float[np.ndarray, " H"]:
    """The peer's forward ratio lambda_l = mean ||a_l|| / (||x_l|| + ||a_l||) over tokens
    and samples; shape (H,). Not the theory's a_l (module docstring): for comparison.

    x_l and a_l are each block's input and attention-branch output in the real forward
    pass, as :func:`~lostmid.influence.gain_passes.record_calls` keeps them."""
    if input_ids.ndim != 2 or input_ids.shape[0] < 1:
        raise UserError("input_ids must be a non-empty (samples, length) tensor")
    check_fits_model(loaded, input_ids)
    sums = RatioSums(loaded.num_layers)
    for lo in range(0, input_ids.shape[0], batch_size):
        ids = input_ids[lo : lo + batch_size].to(loaded.input_device)  # (B, L)
        sums.add(record_calls(loaded, ids))
    return sums.value()


def gains_and_forward_ratio(
    loaded: LoadedModel,
    input_ids: Int[torch.Tensor, "B L"],
    **gain_options: Any,
) -> tuple[BranchGains, Float[np.ndarray, " H"]]:
    """:func:`~lostmid.influence.gains.branch_gains` (``gain_options`` are its keywords)
    and :func:`forward_ratio` from one recorded forward pass per batch instead of two:
    the same numbers as the two apart (both read the calls
    :func:`~lostmid.influence.gain_passes.record_calls` keeps), one forward a sample
    fewer (8.6 s a sample for SmolLM2 at L = 2048 on one thread).

    >>> from lostmid.models import load_model
    >>> from lostmid.influence import random_token_ids
    >>> m, ids = load_model("tiny-qwen2"), random_token_ids(256, 2, 8, seed=0)
    >>> gains, ratio = gains_and_forward_ratio(m, ids, directions=2)
    >>> bool((ratio == forward_ratio(m, ids)).all())
    True
    """
    sums = RatioSums(loaded.num_layers)
    gains = branch_gains(loaded, input_ids, seen=sums.add, **gain_options)
    return gains, sums.value()
