"""One measurement pass: the output at the target, probes, vector-Jacobian products.

For input embeddings x (B, L, d) and the output y = h_t (B, d_out) at the target t, a
cotangent c gives the input gradient c^T dy/dx (B, L, d) in one backward pass and
:func:`sq_norms` its squared norm at every position, ||c^T J_j||^2. Probes c = v with
E[v v^T] = I make that an unbiased estimate of ||J_j||_F^2 (:func:`batch_probes`); the
standard basis c = e_k summed over k gives it exactly (:func:`basis_chunks`).
:func:`measure_batches` runs the passes of a measurement and hands each forward's
statistics to :mod:`~lostmid.influence.profile`; :func:`exact_jacobian_norms` is the
brute-force reference through ``torch.func.jacrev``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Generator, Iterator, Sequence
from contextlib import ExitStack, contextmanager

import numpy as np
import torch

from lostmid.errors import UserError
from lostmid.influence.hooks import Capture, checkpointed_blocks, compiled_blocks, frozen_parameters
from lostmid.influence.profile import BatchStats
from lostmid.models import LoadedModel


class NonFiniteError(UserError):
    """Gradients or activations stopped being finite; the message names the layer."""


class LengthChangedError(UserError):
    """The decoder's blocks see another sequence length than the input's (a model that
    inserts tokens of its own, such as memory-token channels): a per-position gain of
    the input positions is not defined for it."""


def target_output(
    loaded: LoadedModel, x: torch.Tensor, output: str, t: int, cap: Capture
) -> torch.Tensor:
    """The output at target t (1-indexed) as (B, d_out), from input embeddings x (B, L, d)."""
    adapter, model = loaded.adapter, loaded.model
    cap.reset()
    out = adapter.base(model)(inputs_embeds=x, use_cache=False)
    hidden = out.last_hidden_state  # (B, L, d) after the final norm
    if output == "hidden":
        return hidden[:, t - 1]
    if output == "residual":
        assert cap.residual is not None
        return cap.residual[:, t - 1]
    logits = adapter.lm_head(model)(hidden[:, t - 1])  # (B, V)
    if output == "logits":
        return logits
    # top1-prob: the argmax is locally constant, so d p_top1 = d softmax(...)[argmax].
    return logits.float().softmax(-1).max(-1, keepdim=True).values  # (B, 1)


def sample_generator(seed: int, sample: int, stream: int) -> torch.Generator:
    """The probe generator of sample ``sample`` (0-indexed) and ``stream`` (0: the output,
    l: the residual after layer l), independent across (seed, sample, stream)."""
    state = np.random.SeedSequence([seed % 2**63, sample, stream]).generate_state(1, np.uint64)
    return torch.Generator().manual_seed(int(state[0]))


def batch_probes(
    kind: str, count: int, d_out: int, seed: int, first: int, batch: int, stream: int
) -> torch.Tensor:
    """(count, batch, d_out) probes with E[v v^T] = I, float32 on CPU, for samples
    first..first+batch-1 (0-indexed); each sample's probes come from its own generator."""
    rows = []
    for sample in range(first, first + batch):
        gen = sample_generator(seed, sample, stream)
        if kind == "rademacher":
            rows.append(torch.randint(0, 2, (count, d_out), generator=gen).float() * 2 - 1)
        else:
            rows.append(torch.randn((count, d_out), generator=gen))
    return torch.stack(rows, dim=1)


def basis_chunks(d_out: int, batch: int, chunk: int) -> Iterator[torch.Tensor]:
    """Standard basis cotangents e_k, k = 0..d_out-1, in chunks of (k, B, d_out)."""
    for lo in range(0, d_out, chunk):
        hi = min(lo + chunk, d_out)
        eye = torch.zeros(hi - lo, batch, d_out)
        eye[torch.arange(hi - lo), :, torch.arange(lo, hi)] = 1.0
        yield eye


def at_least_float32(t: torch.Tensor) -> torch.Tensor:
    """Accumulate squares in float32 (bfloat16/float16 models) or float64 (float64 models)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


@contextmanager
def no_batching_rule_warning() -> Iterator[None]:
    """Silence torch's notice that a vmapped op (CPU SDPA backward) falls back to a loop.

    The result is exact either way; only speed differs (``eager`` attention batches).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="There is a performance drop because we have not yet implemented"
        )
        yield


def sq_norms(
    y: torch.Tensor, x: torch.Tensor, cotangents: torch.Tensor, strategy: str
) -> torch.Tensor:
    """||c_k^T dy/dx_j||^2 for K cotangents c_k (K, B, d_out): returns (K, B, L) float32."""
    cot = cotangents.to(device=y.device, dtype=y.dtype)
    if strategy == "vmap" and cot.shape[0] > 1:
        with no_batching_rule_warning():
            (grads,) = torch.autograd.grad(y, x, cot, is_grads_batched=True, retain_graph=True)
        return at_least_float32(grads).pow(2).sum(-1)  # (K, B, L)
    rows = []
    for c in cot:
        (grad,) = torch.autograd.grad(y, x, c, retain_graph=True)  # (B, L, d)
        rows.append(at_least_float32(grad).pow(2).sum(-1))  # (B, L)
    return torch.stack(rows)


def first_nonfinite_layer(
    loaded: LoadedModel, x: torch.Tensor, output: str, t: int, cotangent: torch.Tensor
) -> str:
    """Where non-finite values first appear: forward from layer 1 up, then backward from the top."""
    try:
        blocks = loaded.adapter.blocks(loaded.model)
    except UserError:
        return "no adapter for this family, so the layer cannot be named"
    x = x.detach().requires_grad_(True)
    with Capture(loaded, residual=output == "residual", layers=True) as cap:
        y = target_output(loaded, x, output, t, cap)
        layers = list(cap.layers)
    if not torch.isfinite(x).all():
        return "in the input embeddings"
    for index, h in enumerate(layers, start=1):
        if not torch.isfinite(h).all():
            return f"in the forward activations of layer {index} of {len(blocks)}"
    if not torch.isfinite(y).all():
        return "in the forward pass after the last layer (final norm or head)"
    grads = torch.autograd.grad(y, [*layers, x], cotangent.to(y.device, y.dtype), allow_unused=True)
    finite = [g is None or bool(torch.isfinite(g).all()) for g in grads]
    # finite[l-1]: gradient at the output of layer l (l = 1..H); finite[H]: at the input.
    if not finite[len(layers) - 1]:
        return "in the gradient of the final norm or head"
    for layer in range(len(layers), 0, -1):
        below = finite[layer - 2] if layer > 1 else finite[-1]  # gradient at layer's input
        if not below:
            return f"in the gradients flowing back through layer {layer} of {len(blocks)}"
    return "at an unidentified place (not reproducible in a single-probe pass)"


def measure_batches(
    loaded: LoadedModel,
    input_ids: torch.Tensor,
    *,
    probes: int,
    output: str,
    t: int,
    seed: int,
    wanted_layers: set[int],
    exact: bool,
    checkpointing: bool,
    batch_size: int,
    strategy: str,
    probe_kind: str,
    exact_chunk: int,
    compile: bool = False,
) -> Generator[BatchStats, None, None]:
    """One :class:`BatchStats` per forward pass of ``batch_size`` samples, in order.

    Sample s (0-indexed in ``input_ids``) gets its own probe stream
    (:func:`sample_generator`), so the result does not depend on how the samples are
    batched.
    """
    samples, length = input_ids.shape
    model, adapter = loaded.model, loaded.adapter
    device = loaded.input_device
    embed = adapter.token_embedding(model)
    layers_h = loaded.num_layers if wanted_layers else 0
    n_probes = 1 if exact else probes
    with ExitStack() as stack:
        stack.enter_context(torch.enable_grad())
        stack.enter_context(frozen_parameters(model))
        if checkpointing:
            stack.enter_context(checkpointed_blocks(loaded))
        if compile:
            stack.enter_context(compiled_blocks(loaded))
        cap = stack.enter_context(
            Capture(loaded, residual=output == "residual", layers=bool(layers_h))
        )
        for lo in range(0, samples, batch_size):
            ids = input_ids[lo : lo + batch_size].to(device)  # (B, L)
            x = embed(ids).detach().requires_grad_(True)  # (B, L, d)
            y = target_output(loaded, x, output, t, cap)  # (B, d_out)
            bsz, d_out = y.shape
            cot: torch.Tensor | None = None
            if exact:
                z = functools.reduce(
                    torch.add,
                    (
                        sq_norms(y, x, eye, "vmap").sum(0, keepdim=True)
                        for eye in basis_chunks(d_out, bsz, exact_chunk)
                    ),
                )  # (1, B, L)
            else:
                cot = batch_probes(probe_kind, n_probes, d_out, seed, lo, bsz, stream=0)
                z = sq_norms(y, x, cot, strategy)  # (P, B, L)
            if not torch.isfinite(z).all():
                first = cot[0] if cot is not None else torch.ones(bsz, d_out)
                where = first_nonfinite_layer(loaded, x, output, t, first)
                raise NonFiniteError(
                    f"non-finite values first appear {where} (sample {lo + 1}); "
                    "try --dtype float32 or a model with finite weights"
                )
            z64 = z.double().cpu().numpy()  # (P, B, L)
            layer_sums = np.zeros((layers_h, length))
            for index in range(layers_h):
                if index + 1 not in wanted_layers:
                    continue
                h_l = cap.layers[index][:, t - 1]  # (B, d) residual after layer index+1
                if exact:
                    zl = functools.reduce(
                        torch.add,
                        (
                            sq_norms(h_l, x, eye, "vmap").sum(0, keepdim=True)
                            for eye in basis_chunks(h_l.shape[-1], bsz, exact_chunk)
                        ),
                    )
                else:
                    cot_l = batch_probes(
                        probe_kind, n_probes, h_l.shape[-1], seed, lo, bsz, stream=index + 1
                    )
                    zl = sq_norms(h_l, x, cot_l, strategy)
                layer_sums[index] = zl.double().cpu().numpy().mean(0).sum(0)
            del x, y, z
            cap.reset()
            yield BatchStats(
                means=z64.mean(0),
                within=z64.var(0, ddof=1) if n_probes > 1 else None,
                layer_sums=layer_sums,
            )


def exact_jacobian_norms(
    loaded: LoadedModel, input_ids: Sequence[int] | torch.Tensor, output: str = "hidden"
) -> np.ndarray:
    """Brute force ||d h_L / d x_j||_F^2 for one sample via ``torch.func.jacrev``; (L,).

    For tests and small models only: builds the full (d_out, L, d) Jacobian.
    """
    ids = torch.as_tensor(input_ids).reshape(1, -1)
    x0 = loaded.adapter.token_embedding(loaded.model)(ids).detach()  # (1, L, d)
    length = ids.shape[1]
    with Capture(loaded, residual=output == "residual", layers=False) as cap:

        def f(x: torch.Tensor) -> torch.Tensor:
            return target_output(loaded, x, output, length, cap)[0]  # (d_out,)

        with torch.enable_grad(), no_batching_rule_warning():
            jac = torch.func.jacrev(f)(x0)  # (d_out, 1, L, d)
    return jac.double().pow(2).sum(dim=(0, 1, 3)).cpu().numpy()
