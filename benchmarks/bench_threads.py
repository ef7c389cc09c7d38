"""Threads by work size (issue 20): is a second torch thread worth its core?

    python benchmarks/bench_threads.py [--repeats 3]

For models from 34k to 121M parameters, times the two kinds of work lostmid's stages
do, on 1 and on 2 intra-op threads, in one process (threads switched between runs,
the order alternated, the median of ``--repeats`` kept):

* a training step (forward + backward + AdamW) of a qwen2-family model built by
  ``lostmid.train.model.build_model`` at batch 8 x context 64 (the retrieval and tiny
  presets' work per step);
* one influence measurement (``lostmid.influence.influence_profile``: one sample, two
  probes) at L = 128 on the same model.

It prints the speedup t(1 thread) / t(2 threads) per size. ``lostmid.runs.jobs.SMALL_MODEL``
is the size below which a stage runs on one thread: the second thread must buy little
there, because on a machine with other work it costs a core. Run on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from datetime import date

import torch

from lostmid.influence import influence_profile, random_token_ids
from lostmid.runs.jobs import SMALL_MODEL
from lostmid.train.config import ModelSpec
from lostmid.train.model import as_loaded, build_model, parameter_count

SIZES = {  # name (parameters at vocabulary 256): (layers, hidden, heads, intermediate)
    "34k": (2, 32, 2, 88),
    "116k": (2, 64, 4, 172),
    "1.6M": (8, 128, 4, 344),
    "14M": (8, 384, 6, 1032),
    "60M": (12, 640, 10, 1728),
    "121M": (12, 896, 14, 2560),
}


def timed(work: Callable[[], None], threads: int) -> float:
    torch.set_num_threads(threads)
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default=",".join(SIZES))
    args = parser.parse_args()
    print(f"# bench_threads  {date.today()}  cores {os.cpu_count()}  load {os.getloadavg()}")
    print(f"# SMALL_MODEL = {SMALL_MODEL:,} parameters")
    print("| model | parameters | work | 1 thread s | 2 threads s | speedup |")
    print("| --- | --- | --- | --- | --- | --- |")
    gen = torch.Generator().manual_seed(0)
    for name in args.sizes.split(","):
        layers, hidden, heads, inter = SIZES[name]
        spec = ModelSpec(layers=layers, hidden=hidden, heads=heads, kv_heads=heads,
                         intermediate=inter, context=128, vocab_size=256)  # fmt: skip
        model = build_model(spec, seed=0)
        params = parameter_count(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        batch = torch.randint(0, 256, (8, 64), generator=gen)

        def step(model: torch.nn.Module = model, opt: torch.optim.Optimizer = opt,
                 batch: torch.Tensor = batch) -> None:  # fmt: skip
            model.train()
            loss = model(input_ids=batch, labels=batch).loss
            opt.zero_grad()
            loss.backward()
            opt.step()

        loaded = as_loaded(build_model(spec, seed=0), 0)
        ids = random_token_ids(loaded.vocab_size, 1, 128, seed=0)

        def measure(loaded: object = loaded, ids: torch.Tensor = ids) -> None:
            influence_profile(loaded, ids, probes=2, seed=0)

        for work_name, work in (("train step", step), ("measure L=128", measure)):
            work()  # warm-up (allocations, first-call paths)
            times: dict[int, list[float]] = {1: [], 2: []}
            for r in range(args.repeats):
                for threads in (1, 2) if r % 2 == 0 else (2, 1):
                    times[threads].append(timed(work, threads))
            one, two = statistics.median(times[1]), statistics.median(times[2])
            print(f"| {name} | {params:,} | {work_name} | {one:.3f} | {two:.3f} | "
                  f"{one / two:.2f}x |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
