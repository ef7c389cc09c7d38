"""Influence profile of a causal LM: Frobenius norms of input-output Jacobians.

Quantity. For an input sequence with embeddings x_1..x_L (the token embeddings, before
any learned position embedding is added) and an output h_t at the target position t,

    J_j = d h_t / d x_j            (d_out x d)      influence_j = ||J_j||_F.

Outputs (``output``): ``hidden`` the final hidden state after the final norm (the
paper's choice, default); ``residual`` the residual stream before the final norm;
``logits`` the next-token logits at t; ``top1-prob`` the probability of the top-1 next
token at t (the peer project's measure; d_out = 1, the norm is the gradient's L2 norm).

Estimator. For a probe v with E[v v^T] = I (Rademacher by default),

    z_j = ||v^T J_j||^2            E_v[z_j] = ||J_j||_F^2,

so one vector-Jacobian product gives an unbiased estimate of the squared norm at every
position j at once. With S input samples and P probes per sample, z_{s,p,j} is averaged
into m_j = mean_{s,p} z_{s,p,j}, an unbiased estimate of E_s ||J_{s,j}||_F^2 (the
mean over inputs of the squared norm). The reported profile is

    influence_j = sqrt(m_j)        (root-mean-square Frobenius norm over inputs),

because the squared norm is what the estimator gets unbiasedly (the sqrt of an
unbiased estimate is biased low by O(var / m^2), negligible at the reported error).
Its standard error uses the delta method, se(sqrt m) = se(m) / (2 sqrt m), with se(m)
from the spread of the per-sample means m_s = mean_p z_{s,p} (valid for any P):
se(m)^2 = var_s(m_s) / S. With one sample, only the probe part is known:
se(m)^2 = var_probe / P (said in ``stderr_basis``).

Variance split (per position, units of the squared norm): with the nested design
z_{s,p} = mu + (M_s - mu) + (z_{s,p} - M_s),

    var_probe  = E_s Var_v(z | s)  (estimated by the mean within-sample variance),
    var_sample = Var_s(M_s)        (estimated by var_s(m_s) - var_probe / P),
    Var(m) = var_sample / S + var_probe / (S P).

At a fixed budget, the best number of probes per sample is
P* = sqrt((var_probe / var_sample) (c_sample / c_probe)), with c the cost of one
forward (per sample) and of one extra VJP (per probe).

Batching. A sample's probes share ONE forward pass: the VJPs reuse its saved
activations (``strategy="loop"``: one backward per probe with the graph retained;
``strategy="vmap"``: all probes in one vectorised backward, ``is_grads_batched``).
``batch_size`` samples share each forward and each backward; sample s draws its probes
from its own stream (seed, s), so the result does not depend on the batching.
Parameters are frozen during a measurement, so backward passes compute input gradients
only (no parameter ``.grad``, no activations saved for weight gradients).

Cost. Per sample one forward and, per probe, one input-gradient backward; with frozen
parameters the backward costs the forward's FLOPs for dense layers and twice them for
attention (:func:`matmul_inventory`). When the sample-to-sample variance dominates, one
probe per sample is the cheapest way to a given error; :func:`influence_to_precision`
measures samples until every position reaches a target relative standard error.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import torch
from torch.utils.checkpoint import checkpoint

from lostmid.checks import check_choice, check_positive
from lostmid.errors import UserError
from lostmid.models import LoadedModel

OUTPUTS = ("hidden", "residual", "logits", "top1-prob")
STRATEGIES = ("loop", "vmap")
PROBE_KINDS = ("rademacher", "gaussian")


class NonFiniteError(UserError):
    """Gradients or activations stopped being finite; the message names the layer."""


@dataclass(frozen=True)
class InfluenceProfile:
    """A measured influence profile; arrays are indexed by position j-1 (j = 1..L).

    Attributes:
        influence: (L,) sqrt of the mean over samples and probes of ||v^T J_j||^2.
        stderr: (L,) standard error of ``influence`` (delta method).
        mean_sq: (L,) the unbiased estimate m_j of E ||J_j||_F^2.
        stderr_sq: (L,) standard error of ``mean_sq``.
        per_layer: (H, L) influence on the residual stream after each layer
            l = 1..H (row l-1), or None.
        var_probe: (L,) within-sample (probe) variance of z; 0 in exact mode or for
            ``top1-prob``; NaN when P = 1.
        var_sample: (L,) between-sample variance of the per-sample squared norm; NaN
            when S = 1.
        target: the target position t, 1-indexed.
    """

    influence: np.ndarray
    stderr: np.ndarray
    mean_sq: np.ndarray
    stderr_sq: np.ndarray
    per_layer: np.ndarray | None
    var_probe: np.ndarray
    var_sample: np.ndarray
    samples: int
    probes: int
    output: str
    target: int
    exact: bool
    probe_kind: str
    stderr_basis: str

    @property
    def relative_stderr(self) -> np.ndarray:
        """(L,) stderr / influence, NaN where the influence is 0 (causally masked)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.influence > 0, self.stderr / self.influence, np.nan)

    def best_probes_per_sample(self, cost_ratio: float = 1.0) -> float | None:
        """P* = sqrt(median(var_probe / var_sample) * cost_ratio), cost_ratio = c_sample/c_probe."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = self.var_probe / self.var_sample
        ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
        if ratio.size == 0:
            return None
        return float(np.sqrt(np.median(ratio) * cost_ratio))


class _Capture:
    """Forward hooks that keep the residual stream before the final norm and after each block."""

    def __init__(self, loaded: LoadedModel, residual: bool, layers: bool) -> None:
        self.loaded, self.want_residual, self.want_layers = loaded, residual, layers
        self.residual: torch.Tensor | None = None
        self.layers: list[torch.Tensor] = []
        self._handles: list[Any] = []

    def __enter__(self) -> _Capture:
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


def _target_output(
    loaded: LoadedModel, x: torch.Tensor, output: str, t: int, cap: _Capture
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


def _sample_generator(seed: int, sample: int, stream: int) -> torch.Generator:
    """The probe generator of sample ``sample`` (0-indexed) and ``stream`` (0: the output,
    l: the residual after layer l), independent across (seed, sample, stream)."""
    state = np.random.SeedSequence([seed % 2**63, sample, stream]).generate_state(1, np.uint64)
    return torch.Generator().manual_seed(int(state[0]))


def _batch_probes(
    kind: str, count: int, d_out: int, seed: int, first: int, batch: int, stream: int
) -> torch.Tensor:
    """(count, batch, d_out) probes with E[v v^T] = I, float32 on CPU, for samples
    first..first+batch-1 (0-indexed); each sample's probes come from its own generator."""
    rows = []
    for sample in range(first, first + batch):
        gen = _sample_generator(seed, sample, stream)
        if kind == "rademacher":
            rows.append(torch.randint(0, 2, (count, d_out), generator=gen).float() * 2 - 1)
        else:
            rows.append(torch.randn((count, d_out), generator=gen))
    return torch.stack(rows, dim=1)


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


def _basis_chunks(d_out: int, batch: int, chunk: int) -> Iterator[torch.Tensor]:
    """Standard basis cotangents e_k, k = 0..d_out-1, in chunks of (k, B, d_out)."""
    for lo in range(0, d_out, chunk):
        hi = min(lo + chunk, d_out)
        eye = torch.zeros(hi - lo, batch, d_out)
        eye[torch.arange(hi - lo), :, torch.arange(lo, hi)] = 1.0
        yield eye


def _at_least_float32(t: torch.Tensor) -> torch.Tensor:
    """Accumulate squares in float32 (bfloat16/float16 models) or float64 (float64 models)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


@contextmanager
def _no_batching_rule_warning() -> Iterator[None]:
    """Silence torch's notice that a vmapped op (CPU SDPA backward) falls back to a loop.

    The result is exact either way; only speed differs (``eager`` attention batches).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="There is a performance drop because we have not yet implemented"
        )
        yield


def _sq_norms(
    y: torch.Tensor, x: torch.Tensor, cotangents: torch.Tensor, strategy: str
) -> torch.Tensor:
    """||c_k^T dy/dx_j||^2 for K cotangents c_k (K, B, d_out): returns (K, B, L) float32."""
    cot = cotangents.to(device=y.device, dtype=y.dtype)
    if strategy == "vmap" and cot.shape[0] > 1:
        with _no_batching_rule_warning():
            (grads,) = torch.autograd.grad(y, x, cot, is_grads_batched=True, retain_graph=True)
        return _at_least_float32(grads).pow(2).sum(-1)  # (K, B, L)
    rows = []
    for c in cot:
        (grad,) = torch.autograd.grad(y, x, c, retain_graph=True)  # (B, L, d)
        rows.append(_at_least_float32(grad).pow(2).sum(-1))  # (B, L)
    return torch.stack(rows)


def _first_nonfinite_layer(
    loaded: LoadedModel, x: torch.Tensor, output: str, t: int, cotangent: torch.Tensor
) -> str:
    """Where non-finite values first appear: forward from layer 1 up, then backward from the top."""
    try:
        blocks = loaded.adapter.blocks(loaded.model)
    except UserError:
        return "no adapter for this family, so the layer cannot be named"
    x = x.detach().requires_grad_(True)
    with _Capture(loaded, residual=output == "residual", layers=True) as cap:
        y = _target_output(loaded, x, output, t, cap)
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


def _check_request(
    loaded: LoadedModel,
    input_ids: torch.Tensor,
    probes: int,
    output: str,
    target: int | None,
    strategy: str,
    probe_kind: str,
) -> int:
    if output not in OUTPUTS:
        raise UserError(f"--output {output!r} unknown; choose one of {', '.join(OUTPUTS)}")
    if strategy not in STRATEGIES:
        raise UserError(f"strategy {strategy!r} unknown; choose one of {', '.join(STRATEGIES)}")
    if probe_kind not in PROBE_KINDS:
        raise UserError(f"probe kind {probe_kind!r} unknown; choose {', '.join(PROBE_KINDS)}")
    if input_ids.ndim != 2 or input_ids.dtype != torch.long:
        raise UserError("input_ids must be a (samples, length) tensor of token ids (int64)")
    samples, length = input_ids.shape
    if samples < 1:
        raise UserError(f"--samples must be >= 1, got {samples}")
    if probes < 1:
        raise UserError(f"--probes must be >= 1, got {probes}")
    if length < 1:
        raise UserError(f"--length must be >= 1, got {length}")
    if length > loaded.max_length:
        raise UserError(
            f"--length {length} exceeds the maximum {loaded.max_length} of {loaded.spec}; "
            f"use --length {loaded.max_length} or less"
        )
    if int(input_ids.min()) < 0 or int(input_ids.max()) >= loaded.vocab_size:
        raise UserError(f"token ids must lie in 0..{loaded.vocab_size - 1} for {loaded.spec}")
    t = length if target is None else int(target)
    if not 1 <= t <= length:
        raise UserError(f"--target must be a position in 1..{length} (1-indexed), got {target}")
    return t


@dataclass(frozen=True)
class _BatchStats:
    """What one forward pass over B samples contributes (arrays float64 on CPU)."""

    means: np.ndarray  # (B, L): m_s = mean_p z_{s,p}
    within: np.ndarray | None  # (B, L): within-sample variance of z (P > 1), else None
    layer_sums: np.ndarray  # (H, L): sum over the B samples of mean_p z for each layer


def _measure_batches(
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
) -> Iterator[_BatchStats]:
    """One :class:`_BatchStats` per forward pass of ``batch_size`` samples, in order.

    Sample s (0-indexed in ``input_ids``) gets its own probe stream (:func:`_sample_probes`),
    so the result does not depend on how the samples are batched.
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
            _Capture(loaded, residual=output == "residual", layers=bool(layers_h))
        )
        for lo in range(0, samples, batch_size):
            ids = input_ids[lo : lo + batch_size].to(device)  # (B, L)
            x = embed(ids).detach().requires_grad_(True)  # (B, L, d)
            y = _target_output(loaded, x, output, t, cap)  # (B, d_out)
            bsz, d_out = y.shape
            cot: torch.Tensor | None = None
            if exact:
                z = sum(
                    _sq_norms(y, x, eye, "vmap").sum(0, keepdim=True)
                    for eye in _basis_chunks(d_out, bsz, exact_chunk)
                )  # (1, B, L)
            else:
                cot = _batch_probes(probe_kind, n_probes, d_out, seed, lo, bsz, stream=0)
                z = _sq_norms(y, x, cot, strategy)  # (P, B, L)
            if not torch.isfinite(z).all():
                first = cot[0] if cot is not None else torch.ones(bsz, d_out)
                where = _first_nonfinite_layer(loaded, x, output, t, first)
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
                    zl = sum(
                        _sq_norms(h_l, x, eye, "vmap").sum(0, keepdim=True)
                        for eye in _basis_chunks(h_l.shape[-1], bsz, exact_chunk)
                    )
                else:
                    cot_l = _batch_probes(
                        probe_kind, n_probes, h_l.shape[-1], seed, lo, bsz, stream=index + 1
                    )
                    zl = _sq_norms(h_l, x, cot_l, strategy)
                layer_sums[index] = zl.double().cpu().numpy().mean(0).sum(0)
            del x, y, z
            cap.reset()
            yield _BatchStats(
                means=z64.mean(0),
                within=z64.var(0, ddof=1) if n_probes > 1 else None,
                layer_sums=layer_sums,
            )


def _wanted_layers(loaded: LoadedModel, per_layer: bool | Sequence[int]) -> set[int]:
    """The 1-indexed layers whose per-layer profile is asked for (empty: none)."""
    if per_layer is False:
        return set()
    every = set(range(1, loaded.num_layers + 1))
    if per_layer is True:
        return every
    wanted = {int(layer) for layer in per_layer}
    if not wanted or not wanted <= every:
        raise UserError(
            f"per-layer profiles: layers must be in 1..{loaded.num_layers}, got {sorted(wanted)}"
        )
    return wanted


def _progress_bar(progress: bool, console: Any) -> Any:
    if not progress:
        return nullcontext()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def _check_compile(loaded: LoadedModel, compile: bool, checkpointing: bool) -> None:
    if compile and checkpointing:
        raise UserError("compile and checkpointing cannot be combined; choose one")
    if compile and loaded.device_map is not None:
        raise UserError("compile is not supported with a device map; drop one of them")


def influence_profile(
    loaded: LoadedModel,
    input_ids: torch.LongTensor,
    *,
    probes: int = 4,
    output: str = "hidden",
    target: int | None = None,
    seed: int = 0,
    per_layer: bool | Sequence[int] = False,
    exact: bool = False,
    checkpointing: bool = False,
    progress: bool = False,
    batch_size: int = 1,
    strategy: str = "loop",
    probe_kind: str = "rademacher",
    exact_chunk: int = 64,
    console: Any = None,
    compile: bool = False,
) -> InfluenceProfile:
    """Influence ||d h_t / d x_j||_F of every position j on the output at target t.

    Args:
        loaded: a model from :func:`lostmid.models.load_model` (also one split or
            offloaded with ``device_map``: the inputs go to ``loaded.input_device``).
        input_ids: (samples, L) token ids; each row is one input sample.
        probes: probe vectors per sample (ignored when ``exact``). One probe per sample
            and more samples is the cheapest way to a given error when the
            sample-to-sample variance dominates (docs/BENCHMARKS.md).
        output: ``hidden`` | ``residual`` | ``logits`` | ``top1-prob``.
        target: target position t, 1-indexed (default L).
        seed: seeds the probes (inputs are the caller's). Sample s has its own probe
            stream drawn from (seed, s), so the profile does not depend on ``batch_size``.
        per_layer: also measure the influence on the residual stream after each layer
            (True), or after the given 1-indexed layers only (a sequence; the other rows
            of ``per_layer`` are NaN). Layer l costs a backward pass through l blocks,
            so all H layers cost about H/2 times the main profile.
        exact: all output dimensions as cotangents (the exact ||J_j||_F^2 per sample).
        checkpointing: recompute block activations in backward (long contexts).
        compile: run the blocks through ``torch.compile`` (:func:`compiled_blocks`):
            about 2x faster on CPU once compiled, for long runs; not with
            ``checkpointing`` or a ``device_map``.
        batch_size: samples per forward pass: B samples share one forward and each probe
            one backward over all B (activation memory grows with B).
        strategy: ``loop`` (default: one retained-graph backward per probe, the
            lowest memory; 2.05x the naive loop on the 24-layer qwen2-0.5b shape at
            L = 512 with 16 probes) or ``vmap`` (one vectorised backward for all
            probes: 1.31x there, but faster on shallow models, 3.8x at 6 layers;
            docs/BENCHMARKS.md).
        probe_kind: ``rademacher`` (default) or ``gaussian``.

    Parameters are frozen for the duration (:func:`frozen_parameters`), so every
    backward computes input gradients only and no parameter ``.grad`` is allocated.

    Returns:
        An :class:`InfluenceProfile`; its formulas are in the module docstring.

    >>> from lostmid.models import load_model
    >>> from lostmid.influence import random_token_ids
    >>> m = load_model("tiny-qwen2")
    >>> p = influence_profile(m, random_token_ids(256, 2, 8, seed=0), probes=2, target=5)
    >>> p.influence.shape, bool(p.influence[5:].max() == 0)
    ((8,), True)
    """
    t = _check_request(loaded, input_ids, probes, output, target, strategy, probe_kind)
    _check_compile(loaded, compile, checkpointing)
    if batch_size < 1:
        raise UserError(f"batch size must be >= 1, got {batch_size}")
    samples, length = input_ids.shape
    wanted = _wanted_layers(loaded, per_layer)
    stats: list[_BatchStats] = []
    with _progress_bar(progress, console) as bar:
        task = bar.add_task("samples", total=samples) if progress else None
        batches = _measure_batches(
            loaded,
            input_ids,
            probes=probes,
            output=output,
            t=t,
            seed=seed,
            wanted_layers=wanted,
            exact=exact,
            checkpointing=checkpointing,
            batch_size=batch_size,
            strategy=strategy,
            probe_kind=probe_kind,
            exact_chunk=exact_chunk,
            compile=compile,
        )
        with closing(batches):
            for batch in batches:
                stats.append(batch)
                if task is not None:
                    bar.advance(task, batch.means.shape[0])
    return _pool(
        stats, wanted, probes=probes, output=output, target=t, exact=exact, probe_kind=probe_kind
    )


def _pool(
    stats: Sequence[_BatchStats],
    wanted: set[int],
    *,
    probes: int,
    output: str,
    target: int,
    exact: bool,
    probe_kind: str,
) -> InfluenceProfile:
    """The profile of the samples in ``stats`` (see :func:`_summarise`)."""
    means = np.concatenate([b.means for b in stats])  # (S, L)
    within = [b.within for b in stats if b.within is not None]
    layer_means = None
    if wanted:
        layer_sums = np.sum([b.layer_sums for b in stats], axis=0)  # (H, L)
        layer_means = _only(layer_sums / means.shape[0], wanted)
    return _summarise(
        means,
        np.concatenate(within) if within else None,
        layer_means,
        probes=probes,
        output=output,
        target=target,
        exact=exact or output == "top1-prob",
        probe_kind=probe_kind,
    )


def _max_relative_stderr(profile: InfluenceProfile) -> float:
    """max_j stderr_j / influence_j over positions with influence > 0 (inf when none)."""
    relative = profile.relative_stderr
    return float(np.nanmax(relative)) if np.isfinite(relative).any() else float("inf")


def influence_to_precision(
    loaded: LoadedModel,
    input_ids: torch.LongTensor,
    *,
    rse: float = 0.05,
    min_samples: int = 10,
    probes: int = 1,
    output: str = "hidden",
    target: int | None = None,
    seed: int = 0,
    checkpointing: bool = False,
    batch_size: int = 1,
    strategy: str = "loop",
    probe_kind: str = "rademacher",
    progress: bool = False,
    console: Any = None,
    compile: bool = False,
) -> InfluenceProfile:
    """Measure samples from ``input_ids`` in order until every position is known to ``rse``.

    Stopping rule: after each batch, with S samples measured so far, stop when
    S >= ``min_samples`` and max_j se(influence_j) / influence_j <= ``rse`` over the
    positions with influence > 0 (the running relative standard error of the profile,
    module docstring). The result is the profile of the first S rows, identical to
    ``influence_profile(loaded, input_ids[:S], ...)``; ``samples`` says S. When the rows
    run out first, it is the profile of all of them (check ``relative_stderr``).

    Stopping on the running error makes S random; ``min_samples`` keeps the variance
    estimate that the rule reads from being too noisy (it needs S >= 2).

    >>> from lostmid.models import load_model
    >>> from lostmid.influence import random_token_ids
    >>> m = load_model("tiny-qwen2")
    >>> ids = random_token_ids(256, 200, 8, seed=0)
    >>> p = influence_to_precision(m, ids, rse=0.1, min_samples=4)
    >>> bool(np.nanmax(p.relative_stderr) <= 0.1), 4 <= p.samples < 200
    (True, True)
    """
    t = _check_request(loaded, input_ids, probes, output, target, strategy, probe_kind)
    _check_compile(loaded, compile, checkpointing)
    check_positive("rse", rse, integer=False)
    if min_samples < 2:
        raise UserError(
            f"min_samples must be >= 2 (the error needs two samples), got {min_samples}"
        )
    if batch_size < 1:
        raise UserError(f"batch size must be >= 1, got {batch_size}")
    stats: list[_BatchStats] = []
    done = 0
    profile: InfluenceProfile | None = None
    with _progress_bar(progress, console) as bar:
        task = bar.add_task("samples", total=input_ids.shape[0]) if progress else None
        batches = _measure_batches(
            loaded,
            input_ids,
            probes=probes,
            output=output,
            t=t,
            seed=seed,
            wanted_layers=set(),
            exact=False,
            checkpointing=checkpointing,
            batch_size=batch_size,
            strategy=strategy,
            probe_kind=probe_kind,
            exact_chunk=64,
            compile=compile,
        )
        with closing(batches):
            for batch in batches:
                stats.append(batch)
                done += batch.means.shape[0]
                if task is not None:
                    bar.advance(task, batch.means.shape[0])
                profile = _pool(
                    stats,
                    set(),
                    probes=probes,
                    output=output,
                    target=t,
                    exact=False,
                    probe_kind=probe_kind,
                )
                if done >= min_samples and _max_relative_stderr(profile) <= rse:
                    break
    assert profile is not None
    return profile


def _summarise(
    means: np.ndarray,
    within: np.ndarray | None,
    layer_means: np.ndarray | None,
    *,
    probes: int,
    output: str,
    target: int,
    exact: bool,
    probe_kind: str,
) -> InfluenceProfile:
    """Pool per-sample statistics (S, L) into the profile, its error and the variance split."""
    samples, length = means.shape
    mean_sq = means.mean(0)  # (L,)
    if exact:
        var_probe = np.zeros(length)
    elif within is not None:
        var_probe = within.mean(0)
    else:
        var_probe = np.full(length, np.nan)
    p_eff = 1 if exact else probes
    if samples > 1:
        between = means.var(0, ddof=1)  # var_s(m_s): Var(m) = between / S
        var_sample = np.maximum(between - np.nan_to_num(var_probe) / p_eff, 0.0)
        stderr_sq = np.sqrt(between / samples)
        basis = "samples"
    else:
        var_sample = np.full(length, np.nan)
        stderr_sq = np.sqrt(var_probe / p_eff) if np.all(np.isfinite(var_probe)) else var_probe
        basis = "probes only (one sample: input-to-input variance unknown)"
    influence = np.sqrt(mean_sq)
    with np.errstate(divide="ignore", invalid="ignore"):
        stderr = np.where(influence > 0, stderr_sq / (2 * influence), 0.0)
    return InfluenceProfile(
        influence=influence,
        stderr=stderr,
        mean_sq=mean_sq,
        stderr_sq=stderr_sq,
        per_layer=None if layer_means is None else np.sqrt(layer_means),
        var_probe=var_probe,
        var_sample=var_sample,
        samples=samples,
        probes=probes,
        output=output,
        target=target,
        exact=exact,
        probe_kind=probe_kind,
        stderr_basis=basis,
    )


def _only(layer_means: np.ndarray, wanted: set[int]) -> np.ndarray:
    """Rows of layers that were not measured become NaN (layer l is row l-1)."""
    out = np.full_like(layer_means, np.nan)
    for layer in wanted:
        out[layer - 1] = layer_means[layer - 1]
    return out


def exact_jacobian_norms(
    loaded: LoadedModel, input_ids: Sequence[int] | torch.Tensor, output: str = "hidden"
) -> np.ndarray:
    """Brute force ||d h_L / d x_j||_F^2 for one sample via ``torch.func.jacrev``; (L,).

    For tests and small models only: builds the full (d_out, L, d) Jacobian.
    """
    ids = torch.as_tensor(input_ids).reshape(1, -1)
    x0 = loaded.adapter.token_embedding(loaded.model)(ids).detach()  # (1, L, d)
    length = ids.shape[1]
    with _Capture(loaded, residual=output == "residual", layers=False) as cap:

        def f(x: torch.Tensor) -> torch.Tensor:
            return _target_output(loaded, x, output, length, cap)[0]  # (d_out,)

        with torch.enable_grad(), _no_batching_rule_warning():
            jac = torch.func.jacrev(f)(x0)  # (d_out, 1, L, d)
    return jac.double().pow(2).sum(dim=(0, 1, 3)).cpu().numpy()


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


def _linear_shapes(module: torch.nn.Module) -> tuple[int, int] | None:
    """(in, out) of a dense layer: ``nn.Linear`` or the GPT-2 family's ``Conv1D``."""
    if isinstance(module, torch.nn.Linear):
        return module.in_features, module.out_features
    if type(module).__name__ == "Conv1D":  # transformers.pytorch_utils.Conv1D: (in, out)
        weight = module.weight
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
            shape = _linear_shapes(module)
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
    """FLOPs of :func:`influence_profile` on ``samples`` x ``length`` with ``probes`` probes.

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
