"""Benchmark a real checkpoint's influence measurement as the context grows (issue 27,
targets 3 and 4): time per sample and peak memory at each length, their log-log slopes,
the size check's estimate beside the measured peak, and the load time of the GGUF
checkpoint from a new interpreter (the second load reads the dequantised cache).

Each length runs in its own fresh interpreter, so its peak RSS (``ru_maxrss``) is its
own and its load is a second load once the cache is warm:

    python benchmarks/bench_length.py                          # SmolLM2, 512..8192
    python benchmarks/bench_length.py --lengths 512,1024 --model gemma3-270m

Per length: the load of the model (``lostmid.models.load_model``, from the cache), one
warm-up sample at 128 tokens, then ``--samples`` samples of one probe each on random
tokens (``lostmid.influence.influence_profile``, the estimator ``measure`` runs, output
``hidden``, no checkpointing unless ``--checkpointing``); seconds per sample is their
median. The size check is ``lostmid.influence.run.check_measure_size``'s estimate of the
same request (weights + activations + ids), so a refusal before starting can be read
against what the run really took.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime

import numpy as np


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def worker(model: str, length: int, samples: int, checkpointing: bool) -> dict:
    import torch

    from lostmid.influence import influence_profile
    from lostmid.influence.config import MeasureConfig
    from lostmid.models import load_model
    from lostmid.models.budget import activation_bytes, dtype_bytes, parameter_count

    start = time.perf_counter()
    loaded = load_model(model, init="pretrained")
    load_s = time.perf_counter() - start
    rss_loaded = _peak_gib()
    gen = torch.Generator().manual_seed(length)
    vocab = int(loaded.vocab_size)
    warm = torch.randint(0, vocab, (1, 128), generator=gen)
    influence_profile(loaded, warm, probes=1, checkpointing=checkpointing)
    times = []
    for s in range(samples):
        ids = torch.randint(0, vocab, (1, length), generator=gen)
        t0 = time.perf_counter()
        influence_profile(loaded, ids, probes=1, seed=s, checkpointing=checkpointing)
        times.append(time.perf_counter() - t0)
    hf = loaded.model.config
    config = MeasureConfig(model=model, length=length, samples=samples, probes=1)
    attention = getattr(hf, "_attn_implementation", "sdpa") or "sdpa"
    estimate = parameter_count(hf) * dtype_bytes(config.dtype) + activation_bytes(
        hf, tokens=length, length=length, dtype=config.dtype, eager=attention == "eager"
    )
    return {
        "length": length,
        "load_s": load_s,
        "seconds_per_sample": float(np.median(times)),
        "samples": samples,
        "peak_gib": _peak_gib(),
        "loaded_gib": rss_loaded,
        "estimate_gib": estimate / 2**30,
        "attention": attention,
        "threads": torch.get_num_threads(),
    }


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y on log x."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--lengths", default="512,1024,2048,4096,8192")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--checkpointing", action="store_true")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        length = int(args.worker[0])
        print(json.dumps(worker(args.model, length, args.samples, args.checkpointing)))
        return
    load = os.getloadavg()
    print(
        f"bench_length {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.model}, "
        f"{os.cpu_count()} CPUs, load {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}"
    )
    rows = []
    for length in map(int, args.lengths.split(",")):
        cmd = [sys.executable, __file__, "--model", args.model, "--samples", str(args.samples)]
        cmd += ["--worker", str(length), "x"] + (["--checkpointing"] if args.checkpointing else [])
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:]
            print(f"L = {length}: failed ({done.returncode}): {' '.join(tail)}")
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"L = {length:5d}: {row['seconds_per_sample']:8.2f} s/sample, peak "
            f"{row['peak_gib']:6.2f} GiB (loaded {row['loaded_gib']:.2f}, size check "
            f"{row['estimate_gib']:.2f}), load {row['load_s']:.2f} s, {row['attention']}, "
            f"{row['threads']} threads",
            flush=True,
        )
    if len(rows) >= 2:
        ls = [r["length"] for r in rows]
        above = [max(1e-3, r["peak_gib"] - r["loaded_gib"]) for r in rows]
        print(
            f"log-log slope: time {slope(ls, [r['seconds_per_sample'] for r in rows]):.2f}, "
            f"peak memory {slope(ls, [r['peak_gib'] for r in rows]):.2f}, memory above the "
            f"loaded model {slope(ls, above):.2f}"
        )
    load = os.getloadavg()
    print(f"load at the end {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")


if __name__ == "__main__":
    main()
