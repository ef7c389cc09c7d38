"""A second quantisation of a model's weights: the size of the error a 4-bit GGUF file
already carries, applied once more, to bound what quantisation does to a readout.

The registry checkpoints are 4-bit files (Q4_1, Q4_K_M) dequantised to float32; their
error is unknown since the full-precision weights are not here. Re-quantising the
dequantised weights on another 4-bit grid moves each weight by an error of the same
kind and size (symmetric blocks of 32 along each row, scale = max |w| / 7, 15 levels,
as llama.cpp's Q4_0), so how far a readout moves under it estimates how far the file's
own quantisation can have moved it. Matrices only (every tensor of 2 or more
dimensions whose rows hold a whole number of blocks); norms and biases stay as they are.

>>> import torch
>>> w = torch.tensor([[0.7, -0.35, 0.1, 0.0] * 8])
>>> q = requantised_tensor(w)
>>> float((q - w).abs().max()) <= 0.7 / 7 / 2 + 1e-7, sorted(set(q[0, :4].tolist()))[-1]
(True, 0.699999988079071)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

BLOCK = 32
LEVELS = 7  # symmetric levels -8..7, scale from the largest magnitude as Q4_0 does


def requantised_tensor(weight: torch.Tensor, block: int = BLOCK) -> torch.Tensor:
    """``weight`` rounded onto a symmetric 4-bit grid, one scale a block of ``block``
    values along its last dimension (that dimension a multiple of ``block``)."""
    shape = weight.shape
    blocks = weight.reshape(-1, block)
    scale = blocks.abs().amax(dim=1, keepdim=True) / LEVELS
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.clamp(torch.round(blocks / safe), -LEVELS - 1, LEVELS) * scale
    return q.reshape(shape)


@torch.no_grad()
def round_matrices(
    model: Any, block: int, rounded: Callable[[torch.Tensor], torch.Tensor]
) -> dict[str, float]:
    """Replace every matrix of ``model`` (2 or more dimensions, rows a whole number of
    ``block`` values; a tied tensor once) by ``rounded(matrix)`` in place; norms and
    biases stay as they are. Returns the matrices' count and the relative root-mean-
    square change of their weights."""
    changed, squared, total = 0, 0.0, 0.0
    seen: set[int] = set()
    for param in model.parameters():
        if param.ndim < 2 or param.shape[-1] % block or id(param) in seen:
            continue
        seen.add(id(param))  # tied embeddings are one tensor
        new = rounded(param.data).to(param.dtype)
        squared += float(((new.float() - param.data.float()) ** 2).sum())
        total += float((param.data.float() ** 2).sum())
        param.data.copy_(new)
        changed += 1
    return {"matrices": changed, "relative_rms_change": (squared / total) ** 0.5 if total else 0.0}


def requantise(model: Any, block: int = BLOCK) -> dict[str, float]:
    """Re-quantise every matrix of ``model`` in place (module docstring); returns the
    matrices' count and the relative root-mean-square change of their weights."""
    return round_matrices(model, block, lambda w: requantised_tensor(w, block))


QUANTISABLE = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0")
"""GGUF schemes the ``gguf`` package can quantise (its K-quants it only reads)."""
STAND_IN = {"Q4_K": "Q4_1", "Q5_K": "Q5_1", "Q6_K": "Q8_0", "Q3_K": "Q4_0", "Q2_K": "Q4_0"}
"""The nearest scheme the ``gguf`` package can quantise, for one it cannot: the same
bits a weight and an asymmetric (``_1``) or symmetric (``_0``) block of 32."""


def file_scheme(quant_types: dict[str, int]) -> tuple[str, str]:
    """The scheme a random-init twin is quantised with to match a GGUF file: the file's
    most common quantised tensor type (``quant_types``: ggml type -> tensor count, as a
    checkpoint's record holds), or its stand-in (:data:`STAND_IN`); and a note saying
    which.

    >>> file_scheme({"F32": 61, "Q4_1": 211, "Q6_K": 1})
    ('Q4_1', "the file's own Q4_1")
    >>> file_scheme({"F32": 73, "Q4_K": 150, "Q6_K": 20})[0]
    'Q4_1'
    """
    quantised = {k: v for k, v in quant_types.items() if k.startswith("Q")}
    if not quantised:
        raise ValueError("the file holds no quantised tensor: nothing to match")
    main = max(sorted(quantised), key=lambda k: quantised[k])
    if main in QUANTISABLE:
        return main, f"the file's own {main}"
    if main not in STAND_IN:
        raise ValueError(f"no scheme stands in for {main}")
    return STAND_IN[main], (
        f"{STAND_IN[main]}, standing in for the file's {main} (the gguf package cannot "
        "quantise K-quants)"
    )


@torch.no_grad()
def quantise_like(model: Any, scheme: str) -> dict[str, Any]:
    """Round every matrix of ``model`` in place through a GGUF scheme (quantised, then
    dequantised by the ``gguf`` package, as transformers reads a GGUF file): the twin of
    a quantised checkpoint, quantised as the checkpoint was. Matrices whose rows hold a
    whole number of the scheme's blocks; norms and biases stay as they are (as in the
    file, where they are float). Returns the scheme, the matrices' count and the
    relative root-mean-square change of their weights."""
    import numpy as np
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, quants

    qtype = GGMLQuantizationType[scheme]

    def through_gguf(weight: torch.Tensor) -> torch.Tensor:
        data = weight.detach().to(torch.float32).cpu().numpy()
        new = quants.dequantize(quants.quantize(data, qtype), qtype).astype(np.float32)
        return torch.from_numpy(new.reshape(data.shape)).to(weight.device)

    return {"scheme": scheme} | round_matrices(model, GGML_QUANT_SIZES[qtype][0], through_gguf)
