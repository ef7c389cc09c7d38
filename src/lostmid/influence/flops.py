"""FLOP accounting of a measurement: the matrix products of one forward and one
input-gradient backward pass, counted from the model's module shapes."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from lostmid.checks import check_choice
from lostmid.influence.profile import OUTPUTS
from lostmid.models import LoadedModel


@dataclass(frozen=True)
class Matmul:
    """``count`` products of (batch, m, k) @ (batch, k, n) matrices in one pass.

    ``pass_`` is ``forward`` or ``input-gradient`` (the backward pass of a measurement,
    which computes gradients with respect to activations only).
    """

    where: str
    pass_: str
    batch: int
    m: int
    k: int
    n: int
    count: int

    @property
    def flops(self) -> int:
        """2 batch m k n count (one multiply and one add per term)."""
        return 2 * self.batch * self.m * self.k * self.n * self.count


def linear_shapes(module: torch.nn.Module) -> tuple[int, int] | None:
    """(in, out) of a dense layer: ``nn.Linear`` or the GPT-2 family's ``Conv1D``."""
    if isinstance(module, torch.nn.Linear):
        return module.in_features, module.out_features
    if type(module).__name__ == "Conv1D":  # transformers.pytorch_utils.Conv1D: (in, out)
        weight = module.get_parameter("weight")
        return int(weight.shape[0]), int(weight.shape[1])
    return None


def matmul_inventory(
    loaded: LoadedModel, length: int, *, batch_size: int = 1, output: str = "hidden"
) -> tuple[Matmul, ...]:
    """The matrix products of one measurement pass over ``batch_size`` samples of ``length``.

    Forward, per block: every dense layer (in -> out) is an (B L x in) @ (in x out)
    product; attention with H query heads of width h_d is QK^T, (H B) x (L x h_d) @
    (h_d x L), and AV, (H B) x (L x L) @ (L x h_d), computed over the full L x L square
    as dense kernels do (a causal kernel could skip half). The LM head (d -> V) runs at
    the target position only, for the ``logits`` and ``top1-prob`` outputs.

    Input-gradient backward with frozen parameters: a dense layer y = x W needs only
    dx = dy W^T, one (B L x out) @ (out x in) product, the forward's FLOPs (the
    weight-gradient half dW = x^T dy is never computed). Attention's operands are both
    activations, so each product costs two: dQ = dS K and dK = dS^T Q for the scores,
    dA = dO V^T and dV = A^T dO for the values, twice the forward's attention FLOPs:

        F_fwd = sum_dense 2 B L in out + H_blocks 4 B L^2 H h_d   (+ 2 B d V for the head)
        F_bwd = sum_dense 2 B L in out + H_blocks 8 B L^2 H h_d   (+ 2 B d V)

    Counts are by module shapes, so every family with standard multi-head attention is
    covered (grouped-query K/V are repeated to H heads before the products).

    >>> from lostmid.models import load_model
    >>> m = load_model("tiny-qwen2")  # 2 blocks, d = 32, 4 heads of 8, MLP 64
    >>> inv = matmul_inventory(m, 12)
    >>> sum(mm.flops for mm in inv if mm.pass_ == "forward")
    479232
    """
    check_choice("--output", output, OUTPUTS)
    model, adapter = loaded.model, loaded.adapter
    blocks = adapter.blocks(model)
    dense: dict[tuple[str, int, int], int] = {}
    for block in blocks:
        for name, module in block.named_modules():
            shape = linear_shapes(module)
            if shape is not None:
                dense[(name, *shape)] = dense.get((name, *shape), 0) + 1
    config = model.config
    heads = int(config.num_attention_heads)
    head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
    rows, bl = [], batch_size * length
    for (name, n_in, n_out), count in dense.items():
        rows.append(Matmul(name, "forward", 1, bl, n_in, n_out, count))
        rows.append(Matmul(name, "input-gradient", 1, bl, n_out, n_in, count))
    hb, layers = heads * batch_size, len(blocks)
    rows += [
        Matmul("attention scores QK^T", "forward", hb, length, head_dim, length, layers),
        Matmul("attention values AV", "forward", hb, length, length, head_dim, layers),
        # dQ = dS K, dK = dS^T Q, dV = A^T dO: (L x L) @ (L x h_d); dA = dO V^T
        Matmul("attention dQ, dK, dV", "input-gradient", hb, length, length, head_dim, 3 * layers),
        Matmul("attention dA", "input-gradient", hb, length, head_dim, length, layers),
    ]
    if output in ("logits", "top1-prob"):
        n_in, n_out = loaded.hidden_size, loaded.vocab_size
        rows.append(Matmul("lm_head (target only)", "forward", 1, batch_size, n_in, n_out, 1))
        rows.append(
            Matmul("lm_head (target only)", "input-gradient", 1, batch_size, n_out, n_in, 1)
        )
    return tuple(rows)


def measurement_flops(
    loaded: LoadedModel, length: int, *, samples: int, probes: int, output: str = "hidden"
) -> int:
    """FLOPs of :func:`~lostmid.influence.estimator.influence_profile` on ``samples`` x
    ``length`` with ``probes`` probes.

    One forward per sample and one input-gradient backward per probe (matrix products
    only, :func:`matmul_inventory`): S (F_fwd + P F_bwd) at B = 1.

    >>> from lostmid.models import load_model
    >>> measurement_flops(load_model("tiny-qwen2"), 12, samples=2, probes=3)
    4055040
    """
    inventory = matmul_inventory(loaded, length, output=output)
    forward = sum(mm.flops for mm in inventory if mm.pass_ == "forward")
    backward = sum(mm.flops for mm in inventory if mm.pass_ == "input-gradient")
    return samples * (forward + probes * backward)


EAGER_FLOPS_PER_S = 131.6e9
COMPILED_FLOPS_PER_S = 176.9e9
COMPILE_SECONDS = 27.0
"""The measurement's throughput on the 2-core reference machine, eager and compiled, and
what compiling the blocks costs once (its first pass less a compiled pass), measured
quiet on 2026-12-01 (docs/BENCHMARKS.md, "measure at the FLOP floor": qwen2-0.5b shape,
L = 1024, 2 threads). :func:`compile_choice` decides ``--compile auto`` with them: at
these rates compiling pays from about 28 TFLOP, 16 samples at that shape."""


def compile_choice(
    flops: float, *, device: str, checkpointing: bool, device_map: bool
) -> tuple[bool, str]:
    """Whether ``--compile auto`` compiles a measurement of ``flops``, and why.

    Rule: on CPU, compile when the time it saves, flops (1/eager - 1/compiled), is at
    least twice what compiling costs (:data:`COMPILE_SECONDS`), so a wrong rate estimate
    by 2x still does not lose time; never with checkpointing or a device map (compile does
    not support them), and not on other devices (their rates are not measured).

    >>> compile_choice(1e12, device="cpu", checkpointing=False, device_map=False)[0]
    False
    >>> compile_choice(1e14, device="cpu", checkpointing=False, device_map=False)[0]
    True
    """
    if checkpointing or device_map:
        return False, "not compiled: compile does not combine with checkpointing or a device map"
    if not device.startswith("cpu"):
        return False, f"not compiled: auto compiles on CPU only (rates on {device} not measured)"
    saved = flops * (1 / EAGER_FLOPS_PER_S - 1 / COMPILED_FLOPS_PER_S)
    worth = saved >= 2 * COMPILE_SECONDS
    return worth, (
        f"{'compiled' if worth else 'not compiled'}: about {saved:.0f} s saved by compiling "
        f"against {COMPILE_SECONDS:.0f} s to compile (compile when saved >= 2x the cost)"
    )
