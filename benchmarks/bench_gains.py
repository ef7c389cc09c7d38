"""Branch gains' time with the values kernel against the self-only mask (issue 27: as fast
as the hardware allows, the same numbers).

``measure``'s default computes the branch gains beside the profile: per sample one
forward pass, then per layer one block re-run with attention restricted to each
position itself and 2 x ``directions`` vector-Jacobian products through it. Under a
self-only mask a kernel still scores every pair of positions and back-propagates
through them (zero gradients); the values kernel (``lostmid.models.attention.SELF_ONLY``)
returns each position's value instead. This times both in one process, alternating,
on one sample, and for scale one sample-probe of the influence profile itself.

Usage: python benchmarks/bench_gains.py [--model smollm2-135m] [--lengths 512,2048]
[--repeats 2] [--directions 4] (torch threads from OMP_NUM_THREADS).
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
    args = parser.parse_args()

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


if __name__ == "__main__":
    main()
