"""Branch gains: the weight of each residual branch in a block's Jacobian.

Quantity. A pre-norm block maps its input x (positions j = 1..L, width d) by

    y = x + Attn(LN1(x)),        out = y + MLP(LN2(y)).

At output position i its attention branch has the Jacobian

    d y_i / d x_j = delta_ij I + A_ij J_j + (terms through the attention weights),
    J_j = W_O W_V dLN1(x_j)                               (d x d),

where A is the attention matrix and J_j the *value path* of source position j: what one
unit of attention weight on j contributes. The branch gain of layer l at source j is
its RMS operator gain

    s_l(j) = ||J_j||_F / sqrt(d) = sqrt(E_v ||J_j^T v||^2 / d),   E[v v^T] = I.

It is a gain per unit of attention weight, so averaging over the past does not shrink
it (unlike the forward ratio of :mod:`lostmid.influence.residual`, which shrinks like
1/sqrt(i)). The theory's residual strength is a_l = s_l / (1 + s_l); the derivation is in
:mod:`lostmid.influence.residual`.

Places. Every module is found through the family's adapter
(:mod:`lostmid.models.adapters.base`): the mask goes into ``attention``, the branch a is
the output of ``attention_out`` (BLOOM's output projection, Gemma2's branch post-norm),
the MLP branch m that of ``mlp_out``.

Measurement. The value path of every source is isolated exactly by re-running each
block on its real input x_l with an attention mask that lets every position attend
only to itself: the softmax over one entry is the constant 1, so the branch output at
j is W_O W_V LN1(x_j) (plus biases) and its Jacobian is J_j, with no query/key terms
and no mixing between positions (where the family reads transformers' attention
function, the kernel :data:`lostmid.models.attention.SELF_ONLY` returns the values
themselves, the same output without scoring the L x L pairs whose gradients are zero).
One vector-Jacobian product with a cotangent v
(B, L, d) then gives g_j = J_j^T v_j at every position at once. Per layer and position:

    per_position[l, j] = sqrt(mean over inputs and directions of ||g_j||^2 / d)
                        (RMS over inputs, as the influence profile is),
    gain[l]            = mean over j of per_position[l, j],
    residual_strength  = gain / (1 + gain).

The arithmetic mean over positions is the constant that reproduces the depth-1
spike-to-mean ratio t (1 - a) / a = t / s of the measured profile.
Directions are Rademacher vectors, drawn independently at every position for the
attention branch; ``exact=True`` uses the d scaled basis vectors sqrt(d) e_k instead
(E over k of v v^T = I exactly), giving ||J_j||_F^2 without Monte Carlo error.

MLP. With y_l = x_l + a_l the block's real intermediate stream (a_l the output of the
causal attention), the MLP branch including its norm has the Jacobian
K_j = d MLP(LN2(y_j)) / d y_j (the MLP acts on each position alone; in parallel blocks,
out = x + a + MLP(LN(x)), the MLP reads x_l and K_j = d MLP(LN(x_j)) / d x_j), and

    mlp_gain[l, j]      = sqrt(mean over inputs and directions of ||K_j^T w||^2 / d),
    mlp_coherence[l, i] = mean over inputs of
                          1/(L-1) sum_{j != i} <K_i, K_j>_F / (||K_i||_F ||K_j||_F),

the mean Frobenius cosine between position i's Jacobian and the others': 1 when every
K_j is the same matrix up to a positive scale (the MLP acts like a per-position scalar
times one shared map), about 0 when the Jacobians are unrelated across positions. It
is signed (no absolute value), so Monte Carlo noise averages out. It is estimated
with ONE direction w shared by all positions, since E_w <K_i^T w, K_j^T w> =
<K_i, K_j>_F, with the norms from the same directions. NaN where the MLP Jacobian is
zero or when L = 1.

>>> from lostmid.models import load_model
>>> from lostmid.influence import random_token_ids
>>> g = branch_gains(load_model("tiny-qwen2"), random_token_ids(256, 2, 8, seed=0))
>>> g.gain.shape, g.per_position.shape, bool((g.residual_strength < 1).all())
((2,), (2, 8), True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from lostmid.checks import check_positive
from lostmid.errors import UserError
from lostmid.influence.gain_passes import (
    BlockCall,
    coherence,
    layer_vjps,
    mlp_output_module,
    record_calls,
)
from lostmid.influence.inputs import check_fits_model
from lostmid.influence.passes import LengthChangedError, NonFiniteError
from lostmid.models import LoadedModel
from lostmid.typing import Float, Int


def strength_from_gain(gain: Float[np.ndarray, " H"] | float) -> Float[np.ndarray, " H"]:
    """a = s / (1 + s): the residual strength whose layer operator has the branch gain s.

    (1 - a) I + a A W = (I + s A W) / (1 + s), so both have the same normalised shape.

    >>> strength_from_gain(np.array([0.0, 1.0, 3.0])).tolist()
    [0.0, 0.5, 0.75]
    """
    s = np.asarray(gain, dtype=float)
    if np.any(s < 0) or not np.all(np.isfinite(s)):
        raise UserError(f"branch gains must be finite and >= 0, got {s.tolist()}")
    return s / (1.0 + s)


@dataclass(frozen=True)
class BranchGains:
    """Branch gains per layer; arrays are indexed by layer l-1 and position j-1.

    Attributes:
        gain: (H,) s_l, the attention branch gain averaged over positions and inputs.
        per_position: (H, L) s_l(j), the value-path gain of each source position j
            (RMS over inputs); None unless ``per_position``.
        residual_strength: (H,) a_l = s_l / (1 + s_l), the theory's residual strength.
        mlp_gain: (H,) the MLP branch gain (incl. its norm), mean over positions.
        mlp_gain_per_position: (H, L) the MLP gain at each position; or None.
        mlp_coherence: (H,) mean Frobenius cosine of the MLP Jacobians across positions.
        mlp_coherence_per_position: (H, L) that cosine for each position i; or None.
        samples, length: the inputs measured (S rows of L tokens).
        directions: random directions per input (0 when ``exact``).
        exact: the basis was used instead of random directions.
        seed: seeds the directions.
    """

    gain: Float[np.ndarray, " H"]
    per_position: Float[np.ndarray, "H L"] | None
    residual_strength: Float[np.ndarray, " H"]
    mlp_gain: Float[np.ndarray, " H"]
    mlp_gain_per_position: Float[np.ndarray, "H L"] | None
    mlp_coherence: Float[np.ndarray, " H"]
    mlp_coherence_per_position: Float[np.ndarray, "H L"] | None
    samples: int
    length: int
    directions: int
    exact: bool
    seed: int

    def record(self) -> dict[str, Any]:
        """The JSON-ready form (lists of floats; NaN stays NaN, ``None`` when not kept)."""

        def rows(a: np.ndarray | None) -> list[Any] | None:
            return None if a is None else a.tolist()

        return {
            "branch_gain": self.gain.tolist(),
            "residual_strength": self.residual_strength.tolist(),
            "residual_strength_method": "jacobian",
            "gain_per_position": rows(self.per_position),
            "mlp_gain": self.mlp_gain.tolist(),
            "mlp_gain_per_position": rows(self.mlp_gain_per_position),
            "mlp_coherence": self.mlp_coherence.tolist(),
            "mlp_coherence_per_position": rows(self.mlp_coherence_per_position),
            "samples": self.samples,
            "length": self.length,
            "directions": self.directions,
            "exact": self.exact,
            "seed": self.seed,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> BranchGains:
        """The gains back from their :meth:`record` (the one reader of that form)."""

        def rows(key: str) -> np.ndarray | None:
            return None if record.get(key) is None else _floats(record[key])

        return cls(
            gain=_floats(record["branch_gain"]),
            per_position=rows("gain_per_position"),
            residual_strength=_floats(record["residual_strength"]),
            mlp_gain=_floats(record["mlp_gain"]),
            mlp_gain_per_position=rows("mlp_gain_per_position"),
            mlp_coherence=_floats(record["mlp_coherence"]),
            mlp_coherence_per_position=rows("mlp_coherence_per_position"),
            samples=int(record["samples"]),
            length=int(record["length"]),
            directions=int(record["directions"]),
            exact=bool(record["exact"]),
            seed=int(record["seed"]),
        )


def _floats(values: Any) -> np.ndarray:
    """A JSON list (of lists) of numbers as float64; null (a non-finite value) is NaN."""
    return np.asarray(values, dtype=np.float64)


def branch_gains(
    loaded: LoadedModel,
    input_ids: Int[torch.Tensor, "B L"],
    *,
    directions: int = 4,
    seed: int = 0,
    per_position: bool = True,
    batch_size: int = 1,
    exact: bool = False,
    done: Callable[[int], None] | None = None,
    seen: Callable[[list[BlockCall]], None] | None = None,
) -> BranchGains:
    """Attention and MLP branch gains of every layer; the formulas are in the module docstring.

    Args:
        loaded: a model from :func:`lostmid.models.load_model` whose family has an adapter.
        input_ids: (samples, L) token ids.
        directions: random Rademacher directions per input (ignored when ``exact``).
        seed: seeds the directions.
        per_position: keep the (H, L) arrays (the (H,) summaries are always kept).
        batch_size: samples per forward pass.
        exact: use the d scaled basis vectors instead of random directions (d backward
            passes per layer and branch: for small models and tests).
        done: called with the number of samples of each batch once it is finished (a
            progress bar's advance).
        seen: called with each batch's recorded block calls (inputs x_l, attention
            outputs a_l of the real forward pass) before its gain passes: what else
            reads that forward reads it here
            (:func:`lostmid.influence.residual.gains_and_forward_ratio`).

    Returns:
        A :class:`BranchGains`.

    Cost: one forward pass of the model, then per layer one block forward and
    2 x ``directions`` backward passes through one block.

    >>> from lostmid.models import load_model
    >>> from lostmid.influence import random_token_ids
    >>> m = load_model("tiny-gpt2")
    >>> g = branch_gains(m, random_token_ids(256, 1, 6, seed=0), per_position=False)
    >>> g.per_position is None, bool(np.allclose(g.residual_strength, g.gain / (1 + g.gain)))
    (True, True)
    """
    if input_ids.ndim != 2 or input_ids.dtype != torch.long:
        raise UserError("input_ids must be a (samples, length) tensor of token ids (int64)")
    samples, length = input_ids.shape
    check_positive("samples", samples)
    check_positive("length", length)
    check_positive("directions", directions)
    check_positive("batch size", batch_size)
    check_fits_model(loaded, input_ids)
    model, adapter = loaded.model, loaded.adapter
    blocks = adapter.blocks(model)
    for block in blocks:  # fail early, before any work, when a place is missing
        adapter.attention(block)
        adapter.attention_out(block)
        mlp_output_module(loaded, block)
    layers, width = len(blocks), loaded.hidden_size
    device = loaded.input_device  # the embedding's device, also under a device map
    gen = torch.Generator().manual_seed(seed)
    attn_sq = np.zeros((layers, length))  # sum over samples of mean_p ||J_j^T v||^2
    mlp_sq = np.zeros((layers, length))
    mlp_cos = np.zeros((layers, length))
    if exact:
        basis = (
            torch.eye(width, dtype=torch.float64).mul(width**0.5).reshape(width, 1, 1, width)
        )  # sqrt(d) e_k

    for lo in range(0, samples, batch_size):
        ids = input_ids[lo : lo + batch_size].to(device)  # (B, L)
        bsz = ids.shape[0]
        calls = record_calls(loaded, ids)
        if seen is not None:
            seen(calls)
        for index, (block, call) in enumerate(zip(blocks, calls, strict=True)):
            where = f"layer {index + 1} of {layers} (sample {lo + 1})"
            _check_block_input(call, length, where)
            if exact:
                v = w = basis.expand(width, bsz, length, width)
            else:
                v = torch.randint(0, 2, (directions, bsz, length, width), generator=gen) * 2.0 - 1
                w = torch.randint(0, 2, (directions, bsz, 1, width), generator=gen) * 2.0 - 1
            g_attn, g_mlp = layer_vjps(loaded, block, call, v.to(device), w.to(device))
            attn, mlp, cos = _layer_sums(g_attn, g_mlp, where)
            attn_sq[index] += attn
            mlp_sq[index] += mlp
            mlp_cos[index] += cos
        if done is not None:
            done(bsz)
    gain_pos = np.sqrt(attn_sq / samples / width)  # (H, L)
    mlp_pos = np.sqrt(mlp_sq / samples / width)
    coherence_pos = mlp_cos / samples
    gain = gain_pos.mean(1)
    return BranchGains(
        gain=gain,
        per_position=gain_pos if per_position else None,
        residual_strength=strength_from_gain(gain),
        mlp_gain=mlp_pos.mean(1),
        mlp_gain_per_position=mlp_pos if per_position else None,
        mlp_coherence=coherence_pos.mean(1),
        mlp_coherence_per_position=coherence_pos if per_position else None,
        samples=samples,
        length=length,
        directions=0 if exact else directions,
        exact=exact,
        seed=seed,
    )


def _check_block_input(call: BlockCall, length: int, where: str) -> None:
    """A block input must keep the input's ``length`` positions and be finite."""
    if call.hidden.shape[1] != length:
        raise LengthChangedError(
            f"branch gains: {where} sees {call.hidden.shape[1]} positions for an "
            f"input of {length} (the model inserts tokens of its own); measure the "
            "model without them"
        )
    if not torch.isfinite(call.hidden).all():
        raise NonFiniteError(
            f"non-finite block input at {where}; try --dtype float32 or a model with finite weights"
        )


def _layer_sums(
    g_attn: torch.Tensor, g_mlp: torch.Tensor, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(attention, MLP, MLP coherence) (L,) of one layer's vector-Jacobian products
    (directions, B, L, d): the squared gains averaged over directions and the
    coherence, each summed over the batch's samples."""
    if not (torch.isfinite(g_attn).all() and torch.isfinite(g_mlp).all()):
        raise NonFiniteError(
            f"non-finite branch gain at {where}; try --dtype float32 or a model with finite weights"
        )
    attn = g_attn.pow(2).sum(-1).mean(0).sum(0).double().cpu().numpy()
    mlp = g_mlp.pow(2).sum(-1).mean(0).sum(0).double().cpu().numpy()
    with np.errstate(invalid="ignore"):
        cos = coherence(g_mlp).sum(0).double().cpu().numpy()
    return attn, mlp, cos
