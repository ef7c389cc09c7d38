"""Benchmark ``lostmid measure``: batched estimator vs naive loop, time to 5% error, memory.

Each case runs in a fresh subprocess so that its peak RSS (``ru_maxrss``) is its own.

    python benchmarks/bench_measure.py                      # full sizes (slow on 2 CPUs)
    python benchmarks/bench_measure.py --layers 4 --speed-length 256 --rse-length 256 \
        --memory-lengths 512,1024 --long-length 1024        # reduced sizes

Parts:
1. ``speed``: one sample, ``--probes`` probes, L = ``--speed-length``: the naive loop
   (one forward and one backward per probe) against the batched estimator (one forward,
   all probes' VJPs from it: ``loop`` and ``vmap`` strategies).
2. ``rse``: a short run at L = ``--rse-length`` (``--rse-samples`` x ``--rse-probes``),
   then the seconds to reach 5% relative standard error at every position, extrapolated
   from the measured variance split: RSE(influence) = se(m) / (2 m) with
   se(m)^2 = var_sample / S + var_probe / (S P), at the measured cost per sample.
3. ``memory``: peak RSS at L = ``--long-length`` with and without checkpointing (one
   sample, one probe); if a case would not fit, it is measured at the smaller
   ``--memory-lengths`` and extrapolated (said in the table).
4. ``flops`` (not in the default parts): achieved FLOP/s of a measurement at L =
   ``--flop-length`` (one probe per sample, ``--batch-size`` samples per pass, optionally
   ``--compile``) against the machine's matmul throughput for the same shapes, in the
   same process. FLOPs are counted analytically (``lostmid.influence.matmul_inventory``:
   dense layers, attention scores and values over the full L x L square as the eager
   kernel computes them, the LM head when used; the input-gradient backward costs 1x the
   forward for dense layers, 2x for attention, no weight gradients). The matmul floor of
   a pass is the sum over that inventory of count x the time of ``torch.matmul`` on
   random matrices of each shape. Floor and measurement alternate ``--flop-samples``
   times; the ratio is median floor time / median measured time (a load that drifts on
   a shared machine weighs on both alike).
5. ``floor`` (not in the default parts): the time to ``--rse`` (5%) relative standard
   error at every position at L = ``--flop-length``, measured: one probe per sample,
   samples until the running max relative s.e. is <= ``--rse`` (at least
   ``--min-samples``; ``lostmid.influence.influence_to_precision``), against the FLOP
   floor of the samples it needed (S x the per-sample matmul floor, timed before and
   after the run and averaged).

    OMP_NUM_THREADS=2 python benchmarks/bench_measure.py --parts flops,floor --attn eager
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def _current_rss_gib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 2**20
    return float("nan")


def _load(args: argparse.Namespace, attn: str = "sdpa") -> Any:
    from lostmid.models import load_model

    overrides = {"num_hidden_layers": args.layers} if args.layers else None
    return load_model(args.model, seed=0, config_overrides=overrides, attn_implementation=attn)


def worker_speed(args: argparse.Namespace) -> dict[str, Any]:
    """Seconds for P probes on one sample: naive vs batched (loop, vmap)."""
    import torch

    from lostmid.influence import influence_profile, random_token_ids

    results: dict[str, Any] = {}
    for attn in args.attn.split(","):
        loaded = _load(args, attn)
        ids = random_token_ids(loaded.vocab_size, 1, args.speed_length, seed=0)
        influence_profile(loaded, random_token_ids(loaded.vocab_size, 1, 16, 0), probes=2)  # warm
        embed = loaded.adapter.token_embedding(loaded.model)
        base = loaded.adapter.base(loaded.model)
        gen = torch.Generator().manual_seed(0)
        start = time.perf_counter()
        with torch.enable_grad():
            for _ in range(args.probes):  # naive: forward + backward per probe
                x = embed(ids).detach().requires_grad_(True)
                y = base(inputs_embeds=x, use_cache=False).last_hidden_state[:, -1]
                v = torch.randint(0, 2, y.shape, generator=gen).float() * 2 - 1
                (grad,) = torch.autograd.grad(y, x, v)
        results[f"naive_{attn}"] = time.perf_counter() - start
        for strategy in ("loop", "vmap"):
            start = time.perf_counter()
            influence_profile(loaded, ids, probes=args.probes, strategy=strategy)
            results[f"{strategy}_{attn}"] = time.perf_counter() - start
        del loaded
    return results


def worker_rse(args: argparse.Namespace) -> dict[str, Any]:
    """A short run; extrapolate the time to 5% relative s.e. at every position."""
    from lostmid.influence import influence_profile, random_token_ids

    loaded = _load(args)
    ids = random_token_ids(loaded.vocab_size, args.rse_samples, args.rse_length, seed=0)
    start = time.perf_counter()
    prof = influence_profile(loaded, ids, probes=args.rse_probes)
    seconds = time.perf_counter() - start
    per_sample = seconds / args.rse_samples
    m = prof.mean_sq
    vs, vp = np.nan_to_num(prof.var_sample), np.nan_to_num(prof.var_probe)
    best: tuple[float, int, int] | None = None
    for probes in (1, 2, 4, 8, 16, 32):
        # cost per sample ~ forward + probes * backward; backward ~ forward here.
        cost = per_sample * (1 + probes) / (1 + args.rse_probes)
        # Smallest S with max_j se(m_j) / (2 m_j) <= 0.05.
        need = (vs + vp / probes) / (0.1 * m) ** 2  # S >= need at every j
        samples = int(np.ceil(need.max()))
        total = samples * cost
        if best is None or total < best[0]:
            best = (total, samples, probes)
    assert best is not None
    return {
        "short_run_seconds": seconds,
        "short_run_max_rse": float(np.nanmax(prof.relative_stderr)),
        "seconds_to_5pct": best[0],
        "samples_needed": best[1],
        "probes_per_sample": best[2],
        "peak_rss_gib": _peak_rss_gib(),
    }


def worker_memory(args: argparse.Namespace, length: int, checkpointing: bool) -> dict[str, Any]:
    """Peak RSS and seconds for one sample, one probe at ``length``."""
    from lostmid.influence import influence_profile, random_token_ids

    loaded = _load(args)
    base_rss = _current_rss_gib()  # resident after the model is built
    ids = random_token_ids(loaded.vocab_size, 1, length, seed=0)
    start = time.perf_counter()
    influence_profile(loaded, ids, probes=1, checkpointing=checkpointing)
    return {
        "seconds": time.perf_counter() - start,
        "peak_rss_gib": _peak_rss_gib(),
        "model_rss_gib": base_rss,
    }


def _time_matmul(batch: int, m: int, k: int, n: int, dtype: Any, reps: int) -> float:
    """Median seconds of torch.matmul on random (batch, m, k) @ (batch, k, n) operands."""
    import torch

    shape_a, shape_b = ((m, k), (k, n)) if batch == 1 else ((batch, m, k), (batch, k, n))
    a, b = torch.randn(shape_a, dtype=dtype), torch.randn(shape_b, dtype=dtype)
    torch.matmul(a, b)  # warm up (allocation, kernel selection)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        torch.matmul(a, b)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _matmul_floor(inventory: Any, dtype: Any, reps: int) -> dict[str, Any]:
    """Seconds of the inventory's products at the measured matmul speed, per pass kind."""
    cache: dict[tuple[int, int, int, int], float] = {}
    seconds = {"forward": 0.0, "input-gradient": 0.0}
    flops = {"forward": 0, "input-gradient": 0}
    for mm in inventory:
        key = (mm.batch, mm.m, mm.k, mm.n)
        if key not in cache:
            cache[key] = _time_matmul(*key, dtype=dtype, reps=reps)
        seconds[mm.pass_] += mm.count * cache[key]
        flops[mm.pass_] += mm.flops
    return {"seconds": seconds, "flops": flops}


def worker_flops(args: argparse.Namespace, floor_run: bool) -> dict[str, Any]:
    """Achieved FLOP/s of a measurement vs the matmul floor; optionally the 5% run.

    The floor and the measurement alternate, one pass each, ``--flop-samples`` times, and
    the ratio is taken between their medians, so a load that drifts on a shared machine
    weighs on both alike.
    """
    import os

    import torch

    from lostmid.influence import (
        influence_profile,
        influence_to_precision,
        matmul_inventory,
        random_token_ids,
    )

    loaded = _load(args, args.attn.split(",")[0])
    length, batch = args.flop_length, args.batch_size
    dtype = next(loaded.model.parameters()).dtype
    load_before = os.getloadavg()[0]
    inventory = matmul_inventory(loaded, length, batch_size=batch)
    ids = random_token_ids(loaded.vocab_size, batch * (args.flop_samples + 1), length, seed=1)
    start = time.perf_counter()  # warm-up pass (and compilation with --compile)
    influence_profile(loaded, ids[:batch], probes=1, batch_size=batch, compile=args.compile)
    warm_seconds = time.perf_counter() - start
    floors, passes = [], []
    for rep in range(args.flop_samples):
        floor = _matmul_floor(inventory, dtype, reps=1)
        floors.append(floor["seconds"]["forward"] + floor["seconds"]["input-gradient"])
        chunk = ids[(rep + 1) * batch : (rep + 2) * batch]
        start = time.perf_counter()
        influence_profile(loaded, chunk, probes=1, batch_size=batch, compile=args.compile)
        passes.append(time.perf_counter() - start)
    flops_pass = floor["flops"]["forward"] + floor["flops"]["input-gradient"]  # B samples
    per_pass, seconds = float(np.median(floors)), float(np.median(passes))
    result: dict[str, Any] = {
        "threads": torch.get_num_threads(),
        "attention": loaded.attention,
        "compile": args.compile,
        "warm_seconds": warm_seconds,
        "flops_per_sample": flops_pass / batch,
        "forward_flops_per_sample": floor["flops"]["forward"] / batch,
        "matmul_flops_per_s": flops_pass / per_pass,
        "pass_seconds": passes,
        "floor_seconds": floors,
        "measure_flops_per_s": flops_pass / seconds,
        "ratio": per_pass / seconds,
        "floor_seconds_per_sample": per_pass / batch,
        "load_before": load_before,
    }
    if floor_run:
        pool = random_token_ids(loaded.vocab_size, args.max_samples, length, seed=2)
        floor_before = _matmul_floor(inventory, dtype, reps=3)["seconds"]
        start = time.perf_counter()
        prof = influence_to_precision(
            loaded,
            pool,
            rse=args.rse,
            min_samples=args.min_samples,
            probes=1,
            batch_size=batch,
            compile=args.compile,
        )
        seconds = time.perf_counter() - start
        floor_after = _matmul_floor(inventory, dtype, reps=3)["seconds"]
        per_sample = (sum(floor_before.values()) + sum(floor_after.values())) / (2 * batch)
        result |= {
            "rse_seconds": seconds,
            "rse_samples": prof.samples,
            "rse_reached": float(np.nanmax(prof.relative_stderr)),
            "rse_floor_seconds": prof.samples * per_sample,
            "rse_floor_flops_per_s": flops_pass / batch / per_sample,
            "best_probes_per_sample": prof.best_probes_per_sample(),
        }
    result |= {"load_after": os.getloadavg()[0], "peak_rss_gib": _peak_rss_gib()}
    return result


def _spawn(argv: list[str], case: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, *argv, "--worker", *case], capture_output=True, text=True
    )
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2-0.5b")
    parser.add_argument("--layers", type=int, default=0, help="Override depth (0: the preset's).")
    parser.add_argument("--probes", type=int, default=16)
    parser.add_argument("--speed-length", type=int, default=512)
    parser.add_argument("--rse-length", type=int, default=1024)
    parser.add_argument("--rse-samples", type=int, default=2)
    parser.add_argument("--rse-probes", type=int, default=4)
    parser.add_argument("--long-length", type=int, default=4096)
    parser.add_argument("--memory-lengths", default="1024,2048")
    parser.add_argument("--max-gib", type=float, default=20.0, help="Skip cases predicted above.")
    parser.add_argument("--parts", default="speed,rse,memory")
    parser.add_argument("--attn", default="sdpa,eager", help="Attention kernels for speed.")
    parser.add_argument("--flop-length", type=int, default=1024)
    parser.add_argument("--flop-samples", type=int, default=3, help="Alternations (flops).")
    parser.add_argument("--compile", action="store_true", help="torch.compile the blocks.")
    parser.add_argument("--batch-size", type=int, default=1, help="Samples per pass.")
    parser.add_argument("--rse", type=float, default=0.05)
    parser.add_argument("--min-samples", type=int, default=10)
    parser.add_argument("--max-samples", type=int, default=1000)
    parser.add_argument("--worker", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker is not None:
        kind = args.worker[0]
        if kind == "speed":
            result = worker_speed(args)
        elif kind == "rse":
            result = worker_rse(args)
        elif kind == "flops":
            result = worker_flops(args, floor_run=args.worker[1] == "1")
        else:
            result = worker_memory(args, int(args.worker[1]), args.worker[2] == "1")
        print(json.dumps(result))
        return

    argv = list(sys.argv[1:])
    parts = args.parts.split(",")
    rows: list[tuple[str, str]] = []
    name = args.model + (f" ({args.layers} layers)" if args.layers else "")
    if "speed" in parts:
        r = _spawn(argv, ["speed"])
        if "error" in r:
            rows.append(("speed", r["error"]))
        else:
            for attn in args.attn.split(","):
                naive = r[f"naive_{attn}"]
                for strategy in ("loop", "vmap"):
                    batched = r[f"{strategy}_{attn}"]
                    rows.append(
                        (
                            f"{name} L={args.speed_length} P={args.probes} {attn}: "
                            f"naive vs batched-{strategy}",
                            f"{naive:.1f} s vs {batched:.1f} s = {naive / batched:.2f}x",
                        )
                    )
    if "rse" in parts:
        r = _spawn(argv, ["rse"])
        if "error" in r:
            rows.append(("rse", r["error"]))
        else:
            rows.append(
                (
                    f"{name} L={args.rse_length} short run "
                    f"(S={args.rse_samples}, P={args.rse_probes})",
                    f"{r['short_run_seconds']:.1f} s, max RSE {r['short_run_max_rse']:.3f}, "
                    f"peak RSS {r['peak_rss_gib']:.2f} GiB",
                )
            )
            rows.append(
                (
                    f"{name} L={args.rse_length}: seconds to 5% RSE at every position "
                    "(extrapolated)",
                    f"{r['seconds_to_5pct']:.0f} s with S={r['samples_needed']}, "
                    f"P={r['probes_per_sample']}",
                )
            )
    if "memory" in parts:
        lengths = [int(v) for v in args.memory_lengths.split(",") if v]
        for ckpt in (False, True):
            label = "checkpointing" if ckpt else "no checkpointing"
            measured: dict[int, dict[str, Any]] = {}
            for length in lengths:
                measured[length] = _spawn(argv, ["memory", str(length), str(int(ckpt))])
                r = measured[length]
                rows.append(
                    (
                        f"{name} L={length} {label}, 1 sample x 1 probe",
                        r.get("error")
                        or f"peak RSS {r['peak_rss_gib']:.2f} GiB "
                        f"(after load {r['model_rss_gib']:.2f}), {r['seconds']:.1f} s",
                    )
                )
            ok = [(n, m) for n, m in measured.items() if "error" not in m]
            predicted = None
            if len(ok) >= 2:
                (n1, m1), (n2, m2) = ok[-2], ok[-1]
                # Activation memory above the model grows ~linearly in L with a causal
                # SDPA kernel (no L x L matrix stored): fit the last two points.
                slope = (m2["peak_rss_gib"] - m1["peak_rss_gib"]) / (n2 - n1)
                predicted = m2["peak_rss_gib"] + slope * (args.long_length - n2)
            if predicted is not None and predicted > args.max_gib:
                rows.append(
                    (
                        f"{name} L={args.long_length} {label}",
                        f"not run: extrapolated peak {predicted:.1f} GiB > {args.max_gib} GiB",
                    )
                )
                continue
            r = _spawn(argv, ["memory", str(args.long_length), str(int(ckpt))])
            extra = "" if predicted is None else f" (extrapolated {predicted:.1f})"
            rows.append(
                (
                    f"{name} L={args.long_length} {label}, 1 sample x 1 probe",
                    r.get("error")
                    or f"peak RSS {r['peak_rss_gib']:.2f} GiB{extra}, {r['seconds']:.1f} s",
                )
            )
    if "flops" in parts or "floor" in parts:
        r = _spawn(argv, ["flops", str(int("floor" in parts))])
        if "error" in r:
            rows.append(("flops", r["error"]))
        else:
            where = (
                f"{name} L={args.flop_length} B={args.batch_size} {r['attention']}"
                f"{' compiled' if r['compile'] else ''}, {r['threads']} threads"
            )
            rows.append(
                (
                    f"{where}: warm-up pass" + (" (compiles)" if r["compile"] else ""),
                    f"{r['warm_seconds']:.1f} s",
                )
            )
            rows.append(
                (
                    f"{where}: matmul throughput, same shapes (median of {args.flop_samples})",
                    f"{r['matmul_flops_per_s'] / 1e9:.1f} GFLOP/s "
                    f"({r['floor_seconds_per_sample']:.2f} s per sample)",
                )
            )
            rows.append(
                (
                    f"{where}: measurement, 1 probe per sample "
                    f"({r['flops_per_sample'] / 1e12:.3f} TFLOP per sample)",
                    f"{np.median(r['pass_seconds']) / args.batch_size:.2f} s per sample, "
                    f"{r['measure_flops_per_s'] / 1e9:.1f} GFLOP/s "
                    f"= {100 * r['ratio']:.0f}% of matmul throughput",
                )
            )
            if "rse_seconds" in r:
                rows.append(
                    (
                        f"{where}: time to {100 * args.rse:.0f}% relative s.e. at every position "
                        "(measured)",
                        f"{r['rse_seconds']:.0f} s with S={r['rse_samples']} (max RSE "
                        f"{r['rse_reached']:.3f}); floor {r['rse_floor_seconds']:.0f} s; "
                        f"{r['rse_seconds'] / r['rse_floor_seconds']:.2f}x the floor",
                    )
                )
            rows.append(
                (
                    f"{where}: load average before / after, peak RSS",
                    f"{r['load_before']:.1f} / {r['load_after']:.1f}, {r['peak_rss_gib']:.2f} GiB",
                )
            )
    width = max(len(k) for k, _ in rows) if rows else 10
    print(f"{'case'.ljust(width)} | result")
    print(f"{'-' * width}-|-------")
    for key, value in rows:
        print(f"{key.ljust(width)} | {value}")


if __name__ == "__main__":
    main()
