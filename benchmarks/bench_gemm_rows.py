"""Why greedy decoding under ``--design shared`` cannot reach its prefill-rate floor on a
CPU: the rate of one linear layer by the number of rows (tokens) it multiplies at once.

The floor of issue 27's target 1 counts every decoded token at the prefill's rate, where
a linear layer multiplies thousands of rows at once. A greedy step multiplies one row per
question being decoded (at most the questions of one context: 75 at Liu's 75 pairs).
This times ``torch.nn.functional.linear`` on the qwen2-0.5b MLP shape (896 -> 4864) at
1 to 4108 rows, one thread by default, and prints GFLOP/s and the ratio to the
prefill's rate: a step of M rows cannot cost less than that ratio times its floor.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_gemm_rows.py
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=896)
    parser.add_argument("--outputs", type=int, default=4864)
    parser.add_argument("--rows", default="1,16,64,75,256,1024,4108")
    parser.add_argument("--flops", type=float, default=2e10, help="work per timing")
    args = parser.parse_args()
    torch.manual_seed(0)
    weight = torch.randn(args.outputs, args.inputs)
    rates = {}
    for rows in (int(r) for r in args.rows.split(",")):
        x = torch.randn(rows, args.inputs)
        torch.nn.functional.linear(x, weight)  # warm
        flops = 2.0 * rows * args.inputs * args.outputs
        reps = max(3, int(args.flops / flops))
        start = time.perf_counter()
        for _ in range(reps):
            torch.nn.functional.linear(x, weight)
        seconds = (time.perf_counter() - start) / reps
        rates[rows] = flops / seconds / 1e9
    prefill = rates[max(rates)]
    print(f"threads {torch.get_num_threads()}; shape {args.inputs} -> {args.outputs}")
    print("| rows | ms | GFLOP/s | prefill rate / this rate |")
    print("| --- | --- | --- | --- |")
    for rows, rate in rates.items():
        ms = 2.0 * rows * args.inputs * args.outputs / rate / 1e6
        print(f"| {rows} | {ms:.3f} | {rate:.1f} | {prefill / rate:.2f} |")


if __name__ == "__main__":
    main()
