"""Branch gains' time with the values kernel against the self-only mask (issue 27: as fast
as the hardware allows, the same numbers).

``measure``'s default computes the branch gains beside the profile: per sample one
forward pass, then per layer one block re-run with attention restricted to each
position itself and 2 x ``directions`` vector-Jacobian products through it. Under a
self-only mask a kernel still scores every pair of positions and back-propagates
through them (zero gradients); the values kernel (``lostmid.models.attention.SELF_ONLY``)
returns each position's value instead. This times both in one process, alternating,
on one sample, and for scale one sample-probe of the influence profile itself.

``--one-layer K`` times one layer's gain passes (layer K, 1-indexed) each way instead of
a whole sample (long inputs: at L = 8192 a sample through the mask is about 17 min on
one thread), with the forward that records every block's input. ``--ratio`` times the
peer's forward ratio alone and the gains with and without it read from their forward
(:func:`lostmid.influence.gains_and_forward_ratio`), and checks the numbers are equal.

Usage: python benchmarks/bench_gains.py [--model smollm2-135m] [--lengths 512,2048]
[--repeats 2] [--directions 4] [--one-layer K] [--ratio] (torch threads from
OMP_NUM_THREADS).
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--init", default="pretrained")
    parser.add_argument("--lengths", default="512,2048")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--directions", type=int, default=4)
    parser.add_argument("--one-layer", type=int, help="time this layer's passes only")
    parser.add_argument("--ratio", action="store_true", help="time the shared forward")
    args = parser.parse_args()
    if args.one_layer is not None:
        one_layer(args)
        return
    if args.ratio:
        ratio(args)
        return

    import numpy as np
    import torch

    from lostmid.influence import gain_passes, influence_profile, random_token_ids
    from lostmid.influence.gains import branch_gains
    from lostmid.models import load_model

    print(
        f"load average at start: {os.getloadavg()[0]:.2f}; torch threads {torch.get_num_threads()}"
    )
    loaded = load_model(args.model, init=args.init)
    for length in [int(x) for x in args.lengths.split(",")]:
        ids = random_token_ids(loaded.vocab_size, 1, length, seed=0)
        times: dict[str, list[float]] = {"mask": [], "values": []}
        results = {}
        for _ in range(args.repeats):
            for name, available in (("mask", lambda: False), ("values", lambda: True)):
                kept = gain_passes.self_only_available
                if name == "mask":
                    gain_passes.self_only_available = available  # type: ignore[assignment]
                try:
                    start = time.perf_counter()
                    results[name] = branch_gains(loaded, ids, directions=args.directions)
                    times[name].append(time.perf_counter() - start)
                finally:
                    gain_passes.self_only_available = kept
        start = time.perf_counter()
        influence_profile(loaded, ids, probes=1, seed=0)
        profile = time.perf_counter() - start
        mask, values = min(times["mask"]), min(times["values"])
        diff = np.abs(results["values"].per_position - results["mask"].per_position)
        rel = float((diff / np.abs(results["mask"].per_position)).max())
        mlp = np.abs(results["values"].mlp_gain - results["mask"].mlp_gain).max()
        print(
            f"L = {length}: branch gains of one sample ({args.directions} directions, "
            f"{loaded.num_layers} layers): self-only mask {mask:.2f} s, values kernel "
            f"{values:.2f} s ({mask / values:.2f}x); one sample-probe of the profile "
            f"{profile:.2f} s (gains / profile: {mask / profile:.2f} -> {values / profile:.2f}); "
            f"largest relative difference of a per-position gain {rel:.1e}, "
            f"of an MLP gain {mlp:.1e}"
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


def one_layer(args: argparse.Namespace) -> None:
    import resource

    import torch

    from lostmid.influence import gain_passes, random_token_ids
    from lostmid.models import load_model

    def peak() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    print(
        f"load average at start: {os.getloadavg()[0]:.2f}; torch threads {torch.get_num_threads()}"
    )
    loaded = load_model(args.model, init=args.init)
    block = loaded.adapter.blocks(loaded.model)[args.one_layer - 1]
    for length in [int(x) for x in args.lengths.split(",")]:
        ids = random_token_ids(loaded.vocab_size, 1, length, seed=0)
        start = time.perf_counter()
        call = gain_passes.record_calls(loaded, ids)[args.one_layer - 1]
        record = time.perf_counter() - start
        gen = torch.Generator().manual_seed(0)
        shape = (args.directions, 1, length, loaded.hidden_size)
        v = torch.randint(0, 2, shape, generator=gen) * 2.0 - 1
        w = (
            torch.randint(0, 2, (args.directions, 1, 1, loaded.hidden_size), generator=gen) * 2.0
            - 1
        )
        times = {}
        for name in ("values", "mask"):
            kept = gain_passes.self_only_available
            if name == "mask":
                gain_passes.self_only_available = lambda: False  # type: ignore[assignment]
            try:
                start = time.perf_counter()
                gain_passes.layer_vjps(loaded, block, call, v, w)
                times[name] = time.perf_counter() - start
            finally:
                gain_passes.self_only_available = kept
        print(
            f"L = {length}, layer {args.one_layer} of {loaded.num_layers}: the recording forward "
            f"{record:.2f} s; a layer's gain passes through the mask {times['mask']:.2f} s, with "
            f"the values kernel {times['values']:.2f} s ({times['mask'] / times['values']:.2f}x); "
            f"a sample's gains about {record + loaded.num_layers * times['values']:.0f} s against "
            f"{record + loaded.num_layers * times['mask']:.0f} s; peak RSS {peak():.2f} GiB"
        )


def ratio(args: argparse.Namespace) -> None:
    import numpy as np
    import torch

    from lostmid.influence import forward_ratio, gains_and_forward_ratio, random_token_ids
    from lostmid.influence.gains import branch_gains
    from lostmid.models import load_model

    print(
        f"load average at start: {os.getloadavg()[0]:.2f}; torch threads {torch.get_num_threads()}"
    )
    loaded = load_model(args.model, init=args.init)
    for length in [int(x) for x in args.lengths.split(",")]:
        ids = random_token_ids(loaded.vocab_size, args.repeats, length, seed=0)
        start = time.perf_counter()
        alone = forward_ratio(loaded, ids)
        ratio_s = time.perf_counter() - start
        start = time.perf_counter()
        gains = branch_gains(loaded, ids, directions=args.directions)
        gains_s = time.perf_counter() - start
        start = time.perf_counter()
        both, shared = gains_and_forward_ratio(loaded, ids, directions=args.directions)
        both_s = time.perf_counter() - start
        same = np.array_equal(alone, shared) and np.array_equal(
            gains.per_position, both.per_position
        )
        samples = ids.shape[0]
        print(
            f"L = {length}, {samples} samples, a sample: forward ratio alone "
            f"{ratio_s / samples:.2f} s, gains {gains_s / samples:.2f} s, both apart "
            f"{(ratio_s + gains_s) / samples:.2f} s, both from one forward "
            f"{both_s / samples:.2f} s; the same numbers: {same}"
        )


if __name__ == "__main__":
    main()
