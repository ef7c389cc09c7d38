"""Depth 1, where the theory is exact: which residual strength predicts the layer-1 profile?

For the full-size presets at random init, the influence profile of the residual stream
after layer 1 at target t = L is compared with the jacobian kernel at H = 1,

    row_j = sqrt((1 - a)^2 [j = t] + a^2 / t^2),   spike / mean of the rest = t (1 - a) / a,

for a from the branch gain (a = s_1 / (1 + s_1), :func:`lostmid.influence.branch_gains`)
and from the peer's forward ratio (:func:`lostmid.influence.residual_strength` with
``method="forward"``). The "positional" column uses the measured per-source gains s_1(j)
instead of one constant, through the theory's position-resolved jacobian kernel
(:func:`lostmid.theory.positional_influence_row`: row_j = s_1(j) / t for j < t and
sqrt(1 + s_1(t)^2 / t^2) at t, uniform attention).

The residual stream after layer 1 depends only on the embeddings and block 1, so the
profile is measured on the model cut after its first block (same weights; the cut
skips the backward passes through the other layers). Also times ``branch_gains`` with
per-position gains on the full model. Run:

    OMP_NUM_THREADS=2 python benchmarks/bench_depth1.py [--samples 8 --probes 2 --length 512]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import platform
import time

import numpy as np
import torch
from torch import nn

from lostmid.compare import wasserstein1
from lostmid.influence import branch_gains, influence_profile, random_token_ids, residual_strength
from lostmid.models import LoadedModel, load_model
from lostmid.theory import influence_row, positional_influence_row


def first_block_only(loaded: LoadedModel) -> LoadedModel:
    """Cut the model after block 1, in place: the ModuleList of blocks keeps its first."""
    blocks = list(loaded.adapter.blocks(loaded.model))
    for module in loaded.model.modules():
        if isinstance(module, nn.ModuleList) and list(module) == blocks:
            del module[1:]
            return dataclasses.replace(loaded, num_layers=1)
    raise RuntimeError("the blocks' ModuleList was not found")


def spike_over_rest(row: np.ndarray) -> float:
    """Spike over the mean of the other positions: t (1 - a) / a for the depth-1 kernel."""
    return float(row[-1] / row[:-1].mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["qwen2-0.5b", "gpt2"])
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--probes", type=int, default=2)
    parser.add_argument("--directions", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    length = args.length
    print(
        f"# bench_depth1 {datetime.date.today()} {platform.machine()} "
        f"threads={torch.get_num_threads()} torch {torch.__version__}; L={length}, "
        f"{args.samples} samples x {args.probes} probes, {args.directions} directions"
    )
    rows, timings = [], []
    for spec in args.models:
        loaded = load_model(spec, init="random", seed=args.seed)
        ids = random_token_ids(loaded.vocab_size, args.samples, length, seed=args.seed)
        start = time.perf_counter()
        full = branch_gains(loaded, ids[:1], directions=args.directions, seed=args.seed)
        elapsed = time.perf_counter() - start
        timings.append((spec, loaded.num_layers, elapsed, full.residual_strength))
        first = first_block_only(loaded)
        start = time.perf_counter()
        measured = influence_profile(
            first, ids, probes=args.probes, output="residual", seed=args.seed
        ).influence
        gains = branch_gains(first, ids, directions=args.directions, seed=args.seed)
        forward = float(residual_strength(first, ids, method="forward")[0])
        s = float(gains.gain[0])
        a = s / (1 + s)
        jac_row = influence_row(length, 1, a, kernel="jacobian")
        fwd_row = influence_row(length, 1, forward, kernel="jacobian")
        pos_row = positional_influence_row(gains.per_position, kernel="jacobian")
        rows.append(
            (
                spec,
                spike_over_rest(measured),
                length * (1 - a) / a,
                length * (1 - forward) / forward,
                a,
                forward,
                wasserstein1(measured, jac_row),
                wasserstein1(measured, fwd_row),
                wasserstein1(measured, pos_row),
                time.perf_counter() - start,
            )
        )
        del loaded, first
    print()
    print(
        f"{'model':<11} {'spike/rest':>10} {'jac t(1-a)/a':>12} {'fwd t(1-a)/a':>12} "
        f"{'a_jac':>6} {'a_fwd':>6} {'W1 jac':>8} {'W1 fwd':>8} {'W1 pos':>8} {'s':>5}"
    )
    for spec, meas, jac, fwd, a, lam, w_jac, w_fwd, w_pos, secs in rows:
        print(
            f"{spec:<11} {meas:>10.1f} {jac:>12.1f} {fwd:>12.1f} {a:>6.3f} {lam:>6.3f} "
            f"{w_jac:>8.4f} {w_fwd:>8.4f} {w_pos:>8.4f} {secs:>5.0f}"
        )
    print()
    print(f"{'model':<11} {'layers':>6} {'branch_gains s':>14}  a_l = s/(1+s) (1 sample)")
    for spec, layers, secs, strength in timings:
        shown = " ".join(f"{v:.2f}" for v in strength)
        print(f"{spec:<11} {layers:>6} {secs:>14.1f}  {shown}")


if __name__ == "__main__":
    main()
