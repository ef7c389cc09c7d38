"""The passes behind :func:`lostmid.influence.gains.branch_gains`: each block re-run on
its recorded input (attention restricted to the position itself, so that a source
position's value path is isolated: a self-only mask, and the kernel that returns the
values themselves where the family reads its attention function), vector-Jacobian
products of each branch in batches of cotangents, and the MLP's coherence across
positions. The formulas are in :mod:`lostmid.influence.gains`.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.influence.passes import at_least_float32
from lostmid.models import LoadedModel
from lostmid.models.attention import SELF_ONLY, attention_kernel, self_only_available


def mlp_output_module(loaded: LoadedModel, block: nn.Module) -> nn.Module:
    """The module whose output is the block's MLP branch m (the adapter's ``mlp_out``),
    after checking that the family names its MLP (``mlp``) at all."""
    adapter = loaded.adapter
    adapter.mlp(block)
    return adapter.mlp_out(block)


def self_only_mask(batch: int, length: int, dtype: torch.dtype, device: Any) -> torch.Tensor:
    """(B, 1, L, L) additive mask: 0 on the diagonal, the most negative float elsewhere."""
    mask = torch.full((length, length), torch.finfo(dtype).min, dtype=dtype, device=device)
    mask.fill_diagonal_(0.0)
    return mask.expand(batch, 1, length, length)


@dataclass
class BlockCall:
    """How the model called one block in the real forward pass, and its attention output."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    attention_output: torch.Tensor | None = None

    @property
    def hidden(self) -> torch.Tensor:
        return self.args[0] if self.args else self.kwargs["hidden_states"]  # (B, L, d)

    def with_hidden(self, x: torch.Tensor) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if self.args:
            return (x, *self.args[1:]), self.kwargs
        return self.args, {**self.kwargs, "hidden_states": x}


def record_calls(loaded: LoadedModel, ids: torch.Tensor) -> list[BlockCall]:
    """Run the model once; keep each block's call (input x_l) and attention output a_l."""
    model, adapter = loaded.model, loaded.adapter
    blocks = adapter.blocks(model)
    calls: list[BlockCall | None] = [None] * len(blocks)
    handles: list[Any] = []

    def keep_call(index: int, args: tuple, kwargs: dict) -> None:
        calls[index] = BlockCall(tuple(args), dict(kwargs))

    def keep_output(index: int, output: Any) -> None:
        a = output[0] if isinstance(output, tuple) else output  # (B, L, d) or (B L, d)
        call = calls[index]
        assert call is not None
        call.attention_output = a.detach()

    try:
        for index, block in enumerate(blocks):
            handles.append(
                block.register_forward_pre_hook(
                    lambda m, a, k, i=index: keep_call(i, a, k), with_kwargs=True
                )
            )
            handles.append(
                adapter.attention_out(block).register_forward_hook(
                    lambda m, a, o, i=index: keep_output(i, o)
                )
            )
        with torch.no_grad():
            x = adapter.token_embedding(model)(ids)  # (B, L, d)
            adapter.base(model)(inputs_embeds=x, use_cache=False)
    finally:
        for handle in handles:
            handle.remove()
    return [call for call in calls if call is not None]


def layer_vjps(
    loaded: LoadedModel,
    block: nn.Module,
    call: BlockCall,
    attention_cotangents: torch.Tensor,
    mlp_cotangents: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Re-run one block with self-only attention; return J_j^T v_j and K_j^T w_j.

    The places are the adapter's: the mask goes into ``attention``, the branch a is the
    output of ``attention_out`` and the MLP branch m that of ``mlp_out``. The MLP reads
    y = x + a_l (serial blocks: a_l the real causal branch, swapped in for the
    self-only one) or x itself (parallel blocks), and K is taken with respect to that.

    Shapes: cotangents (P, B, L, d) (MLP ones may broadcast over L); returns two
    (P, B, L, d) tensors, float32 at least.
    """
    adapter = loaded.adapter
    attention, attention_out = adapter.attention(block), adapter.attention_out(block)
    mlp_out = mlp_output_module(loaded, block)
    parallel = adapter.parallel_residual(block)
    x = call.hidden.detach().requires_grad_(True)  # (B, L, d) block input x_l
    batch, length, _ = x.shape
    mask = self_only_mask(batch, length, x.dtype, x.device)
    assert call.attention_output is not None
    real_a = call.attention_output.clone().requires_grad_(True)  # a_l of the causal model
    mlp_input = x if parallel else real_a
    kept: dict[str, torch.Tensor] = {}

    def self_only(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        if "attention_mask" not in kwargs:
            raise UserError(
                f"{type(block).__name__} passes its attention mask positionally; branch "
                "gains need it as the attention_mask keyword"
            )
        return args, {**kwargs, "attention_mask": mask}

    def swap_output(module: nn.Module, args: tuple, output: Any) -> Any:
        # Keep the value-path output; feed the MLP the real stream y = x + a_l instead.
        kept["branch"] = output[0] if isinstance(output, tuple) else output
        return (real_a, *output[1:]) if isinstance(output, tuple) else real_a

    def keep_mlp(module: nn.Module, args: tuple, output: Any) -> None:
        kept["mlp"] = output[0] if isinstance(output, tuple) else output

    handles = [
        attention.register_forward_pre_hook(self_only, with_kwargs=True),
        attention_out.register_forward_hook(swap_output),
        mlp_out.register_forward_hook(keep_mlp),
    ]
    kernel = (  # the values themselves where the family reads its attention function
        attention_kernel(loaded.model, SELF_ONLY)
        if self_only_available()
        else contextlib.nullcontext()
    )
    try:
        args, kwargs = call.with_hidden(x)
        with torch.enable_grad():
            with kernel:
                block(*args, **kwargs)
            branch = kept["branch"].reshape(x.shape)  # (B, L, d)
            m = kept["mlp"].reshape(x.shape)  # (B, L, d); OPT runs (B L, d)
            v = attention_cotangents.to(branch.dtype).expand(-1, *branch.shape)
            g_attn = vjps(branch, x, v)
            if m.requires_grad:
                w = mlp_cotangents.to(m.dtype).expand(-1, *m.shape)
                g_mlp = vjps(m, mlp_input, w)
            else:  # an ablated (zeroed) MLP has no graph: K = 0
                g_mlp = torch.zeros_like(g_attn)
    finally:
        for handle in handles:
            handle.remove()
    return g_attn, g_mlp


VJP_CHUNK = 16  # cotangents per batched backward (bounds memory in exact mode)


def vjps(y: torch.Tensor, x: torch.Tensor, cotangents: torch.Tensor) -> torch.Tensor:
    """The P vector-Jacobian products c_p^T dy/dx, (P, B, L, d) at float32 or wider.

    Batched backwards (``is_grads_batched``, :data:`VJP_CHUNK` cotangents each) when the
    graph allows it, else one backward per cotangent (BLOOM's custom GeLU has no
    batching rule); the numbers are the same. An input y does not use gives zeros.
    """
    out = []
    for chunk in cotangents.split(VJP_CHUNK):
        if chunk.shape[0] > 1:
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message="There is a performance drop")
                    (g,) = torch.autograd.grad(
                        y, x, chunk, is_grads_batched=True, retain_graph=True, allow_unused=True
                    )
                out.append(at_least_float32(torch.zeros_like(chunk) if g is None else g))
                continue
            except RuntimeError:
                pass
        for c in chunk:
            (g,) = torch.autograd.grad(y, x, c, retain_graph=True, allow_unused=True)
            out.append(at_least_float32(torch.zeros_like(c) if g is None else g)[None])
    return torch.cat(out)


def coherence(g: torch.Tensor) -> torch.Tensor:
    """Mean Frobenius cosine <K_i, K_j>_F / (|K_i| |K_j|) over j != i, per (B, L).

    g: (P, B, L, d) = K_j^T w_p with w_p shared by all positions.
    """
    length = g.shape[2]
    norm_sq = g.pow(2).sum(-1).mean(0)  # (B, L): ||K_j||_F^2 estimate
    if length < 2:
        return torch.full_like(norm_sq, float("nan"))
    unit = g / norm_sq.sqrt().unsqueeze(-1)  # (P, B, L, d); NaN where K_j = 0
    total = unit.sum(2, keepdim=True)  # (P, B, 1, d)
    others = (unit * total).sum(-1) - unit.pow(2).sum(-1)  # (P, B, L): sum over j != i
    return others.mean(0) / (length - 1)
