"""Benchmark of the exact theory engine (issue 2 targets).

1. Exact causal rollout row, L = 1,000,000, H = 24: seconds (best of --repeats), peak
   extra memory, and the ratio to the memory-bandwidth floor, H bare cumulative-sum
   passes over L float64 (target: <= 0.2 s and <= 3x the floor).
2. Against the dense approach at L = 4096, H = 24: matrix powers (np.linalg.matrix_power)
   and repeated vector-matrix products (target: >= 1000x faster than dense powers).
3. Log-domain mode cost relative to float64 mode.

Usage: python benchmarks/bench_theory.py [--length 1000000] [--layers 24] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import tracemalloc
from collections.abc import Callable
from datetime import date

import numpy as np

from lostmid.theory import influence_row, log_influence_row


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--length", type=int, default=1_000_000)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--dense-length", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    length, layers, alpha = args.length, args.layers, 0.1
    rows: list[tuple[str, str]] = []

    # 1. exact row vs the bandwidth floor
    exact = best_of(lambda: influence_row(length, layers, alpha), args.repeats)
    x, y = np.random.default_rng(0).random(length), np.empty(length)
    floor = best_of(lambda: [np.cumsum(x, out=y) for _ in range(layers)], args.repeats)
    mem = peak_bytes(lambda: influence_row(length, layers, alpha))
    rows += [
        (f"exact row L={length:,} H={layers} (s)", f"{exact:.4f}  (target <= 0.2)"),
        ("floor: H bare cumsum passes (s)", f"{floor:.4f}"),
        ("exact / floor", f"{exact / floor:.2f}x  (target <= 3x)"),
        ("peak extra memory (MB)", f"{mem / 1e6:.1f}  (= {mem / (8 * length):.1f} x L float64)"),
    ]

    # 2. dense comparison
    n = args.dense_length
    m = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    nmat = (1 - alpha) * np.eye(n) + alpha * m

    def vecmat() -> np.ndarray:
        w = np.zeros(n)
        w[-1] = 1.0
        for _ in range(layers):
            w = w @ nmat
        return w

    dense_pow = best_of(lambda: np.linalg.matrix_power(nmat, layers)[-1], 1)
    dense_vec = best_of(vecmat, 3)
    ours = best_of(lambda: influence_row(n, layers, alpha), 50)
    err = np.max(np.abs(vecmat() - influence_row(n, layers, alpha)))
    rows += [
        (f"dense matrix_power L={n} H={layers} (s)", f"{dense_pow:.3f}"),
        ("dense repeated vec-mat (s)", f"{dense_vec:.4f}"),
        ("lostmid exact row (s)", f"{ours:.6f}"),
        ("speed-up vs dense powers", f"{dense_pow / ours:,.0f}x  (target >= 1000x)"),
        ("speed-up vs repeated vec-mat", f"{dense_vec / ours:,.0f}x"),
        ("max |difference| vs dense", f"{err:.1e}"),
    ]

    # 3. log-domain cost
    log_t = best_of(lambda: log_influence_row(length, layers, alpha), max(1, args.repeats // 3))
    rows.append(("log-domain / float64 time", f"{log_t / exact:.1f}x  ({log_t:.3f} s)"))

    print(
        f"# bench_theory  {date.today()}  {platform.processor() or platform.machine()}  "
        f"cpus={os.cpu_count()}  numpy {np.__version__}"
    )
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


if __name__ == "__main__":
    main()
