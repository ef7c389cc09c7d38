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
position j at once (:mod:`~lostmid.influence.passes`). With S input samples and P probes
per sample, z_{s,p,j} is averaged into m_j = mean_{s,p} z_{s,p,j}, an unbiased estimate
of E_s ||J_{s,j}||_F^2 (the mean over inputs of the squared norm). The reported profile is

    influence_j = sqrt(m_j)        (root-mean-square Frobenius norm over inputs),

because the squared norm is what the estimator gets unbiasedly (the sqrt of an
unbiased estimate is biased low by O(var / m^2), negligible at the reported error).
Its standard error (delta method) and the split of its variance into a probe part and
a sample part are in :mod:`~lostmid.influence.profile`. At a fixed budget, the best
number of probes per sample is P* = sqrt((var_probe / var_sample) (c_sample / c_probe)),
with c the cost of one forward (per sample) and of one extra VJP (per probe).

Batching. A sample's probes share ONE forward pass: the VJPs reuse its saved
activations (``strategy="loop"``: one backward per probe with the graph retained;
``strategy="vmap"``: all probes in one vectorised backward, ``is_grads_batched``).
``batch_size`` samples share each forward and each backward; sample s draws its probes
from its own stream (seed, s), so the result does not depend on the batching.
Parameters are frozen during a measurement (:mod:`~lostmid.influence.hooks`), so
backward passes compute input gradients only (no parameter ``.grad``, no activations
saved for weight gradients).

Cost. Per sample one forward and, per probe, one input-gradient backward; with frozen
parameters the backward costs the forward's FLOPs for dense layers and twice them for
attention (:func:`~lostmid.influence.flops.matmul_inventory`). When the sample-to-sample
variance dominates, one probe per sample is the cheapest way to a given error;
:func:`influence_to_precision` measures samples until every position reaches a target
relative standard error.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import closing, nullcontext
from typing import Any

import torch

from lostmid.checks import check_choice, check_position, check_positive
from lostmid.errors import UserError
from lostmid.influence.inputs import check_fits_model
from lostmid.influence.passes import measure_batches
from lostmid.influence.profile import (
    OUTPUTS,
    PROBE_KINDS,
    STRATEGIES,
    BatchStats,
    InfluenceProfile,
    max_relative_stderr,
    pool_batches,
)
from lostmid.models import LoadedModel
from lostmid.typing import Int

# The estimator's vocabulary, importable from here as before (homes: profile, passes).


def _check_request(
    loaded: LoadedModel,
    input_ids: torch.Tensor,
    probes: int,
    output: str,
    target: int | None,
    strategy: str,
    probe_kind: str,
) -> int:
    """The target t (1-indexed) of a checked request."""
    check_choice("--output", output, OUTPUTS)
    check_choice("strategy", strategy, STRATEGIES)
    check_choice("probe kind", probe_kind, PROBE_KINDS)
    if input_ids.ndim != 2 or input_ids.dtype != torch.long:
        raise UserError("input_ids must be a (samples, length) tensor of token ids (int64)")
    samples, length = input_ids.shape
    if samples < 1:
        raise UserError(f"--samples must be >= 1, got {samples}")
    if probes < 1:
        raise UserError(f"--probes must be >= 1, got {probes}")
    if length < 1:
        raise UserError(f"--length must be >= 1, got {length}")
    check_fits_model(loaded, input_ids)
    t = int(check_position("--target", target, length))
    return t


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
    from lostmid.runs.progress import count_bar

    # a log (not a terminal) gets a plain line as samples finish, not silence until the end
    return count_bar("measure", console)


def _check_compile(loaded: LoadedModel, compile: bool, checkpointing: bool) -> None:
    if compile and checkpointing:
        raise UserError("compile and checkpointing cannot be combined; choose one")
    if compile and loaded.device_map is not None:
        raise UserError("compile is not supported with a device map; drop one of them")


def influence_profile(
    loaded: LoadedModel,
    input_ids: Int[torch.Tensor, "B L"],
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
        compile: run the blocks through ``torch.compile``
            (:func:`~lostmid.influence.hooks.compiled_blocks`): about 2x faster on CPU
            once compiled, for long runs; not with ``checkpointing`` or a ``device_map``.
        batch_size: samples per forward pass: B samples share one forward and each probe
            one backward over all B (activation memory grows with B).
        strategy: ``loop`` (default: one retained-graph backward per probe, the
            lowest memory; 2.05x the naive loop on the 24-layer qwen2-0.5b shape at
            L = 512 with 16 probes) or ``vmap`` (one vectorised backward for all
            probes: 1.31x there, but faster on shallow models, 3.8x at 6 layers;
            docs/BENCHMARKS.md).
        probe_kind: ``rademacher`` (default) or ``gaussian``.

    Parameters are frozen for the duration
    (:func:`~lostmid.influence.hooks.frozen_parameters`), so every backward computes
    input gradients only and no parameter ``.grad`` is allocated.

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
    stats: list[BatchStats] = []
    with _progress_bar(progress, console) as bar:
        task = bar.add_task("samples", total=samples) if progress else None
        batches = measure_batches(
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
    return pool_batches(
        stats, wanted, probes=probes, output=output, target=t, exact=exact, probe_kind=probe_kind
    )


def influence_to_precision(
    loaded: LoadedModel,
    input_ids: Int[torch.Tensor, "B L"],
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
    >>> bool(p.relative_stderr[p.influence > 0].max() <= 0.1), 4 <= p.samples < 200
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
    stats: list[BatchStats] = []
    done = 0
    profile: InfluenceProfile | None = None
    with _progress_bar(progress, console) as bar:
        task = bar.add_task("samples", total=input_ids.shape[0]) if progress else None
        batches = measure_batches(
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
                profile = pool_batches(
                    stats,
                    set(),
                    probes=probes,
                    output=output,
                    target=t,
                    exact=False,
                    probe_kind=probe_kind,
                )
                if done >= min_samples and max_relative_stderr(profile) <= rse:
                    break
    assert profile is not None
    return profile
