"""How a model runs during a measurement: captured activations, frozen parameters,
checkpointed or compiled blocks (context managers that restore the model on exit)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from lostmid.models import LoadedModel


class Capture:
    """Forward hooks that keep the residual stream before the final norm and after each block."""

    def __init__(self, loaded: LoadedModel, residual: bool, layers: bool) -> None:
        self.loaded, self.want_residual, self.want_layers = loaded, residual, layers
        self.residual: torch.Tensor | None = None
        self.layers: list[torch.Tensor] = []
        self._handles: list[Any] = []

    def __enter__(self) -> Capture:
        model, adapter = self.loaded.model, self.loaded.adapter
        if self.want_residual:
            self._handles.append(
                adapter.final_norm(model).register_forward_pre_hook(self._keep_residual)
            )
        if self.want_layers:
            for block in adapter.blocks(model):
                self._handles.append(block.register_forward_hook(self._keep_layer))
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()

    def reset(self) -> None:
        self.residual, self.layers = None, []

    def _keep_residual(self, module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        self.residual = args[0]  # (B, L, d) residual stream after the last block

    def _keep_layer(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        self.layers.append(output[0] if isinstance(output, tuple) else output)  # (B, L, d)


@contextmanager
def checkpointed_blocks(loaded: LoadedModel) -> Iterator[None]:
    """Gradient checkpointing per block: keep block inputs, recompute the rest in backward.

    Works in eval mode (unlike ``gradient_checkpointing_enable``, which needs
    ``model.train()`` and would switch dropout on).
    """
    blocks = loaded.adapter.blocks(loaded.model)
    originals = [block.forward for block in blocks]

    def run(forward: Any, *args: Any, **kwargs: Any) -> Any:
        return checkpoint(forward, *args, use_reentrant=False, **kwargs)

    try:
        for block, forward in zip(blocks, originals, strict=True):
            block.forward = partial(run, forward)
        yield
    finally:
        for block, forward in zip(blocks, originals, strict=True):
            block.forward = forward


@contextmanager
def compiled_blocks(loaded: LoadedModel) -> Iterator[None]:
    """Each block's forward through ``torch.compile`` (inductor) inside, restored on exit.

    Fuses the elementwise work around the matrix products (norms, rotary, activation,
    attention scale, mask and softmax) in the forward and in the input-gradient backward,
    which on CPU is most of the time not spent in matmuls (docs/BENCHMARKS.md). The
    blocks share one compiled graph; the first call at a new shape compiles (about a
    minute on 2 CPU cores), later calls and later runs in the process reuse it.
    Inductor may reorder floating-point sums: the result agrees with the uncompiled
    one to about 1e-7 relative, far inside any measurement's error.
    """
    blocks = loaded.adapter.blocks(loaded.model)
    originals = [block.forward for block in blocks]
    try:
        with warnings.catch_warnings():
            # inductor imports modules that use a deprecated torch.jit decorator; not ours
            warnings.filterwarnings("ignore", message="`torch.jit.script_method` is deprecated")
            for block, forward in zip(blocks, originals, strict=True):
                block.forward = torch.compile(forward, dynamic=False)
            yield
    finally:
        for block, forward in zip(blocks, originals, strict=True):
            block.forward = forward


@contextmanager
def frozen_parameters(model: torch.nn.Module) -> Iterator[None]:
    """Every parameter's ``requires_grad`` False inside, restored on exit.

    With frozen parameters autograd saves no activations for weight gradients and a
    backward pass computes input gradients only: no parameter ``.grad`` is allocated.
    A model shared with a training loop (``LoadedModel.from_module``) is left as it was.
    """
    params = list(model.parameters())
    flags = [p.requires_grad for p in params]
    try:
        for p in params:
            p.requires_grad_(False)
        yield
    finally:
        for p, flag in zip(params, flags, strict=True):
            p.requires_grad_(flag)
