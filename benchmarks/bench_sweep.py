"""Benchmark of ``lostmid sweep`` (issue 12 target): Ray backend against local.

A 2 x 2 x 2 sweep of the measure task (tiny-qwen2, tiny-gpt2 x seeds 0-1 x two lengths)
run four times, each as its own ``lostmid sweep`` process, as a user would run it:

1. ``--backend ray`` (a local Ray instance started by the sweep, CPUs = this machine's),
   then the same command again, which must reuse every unit;
2. ``--backend local`` (in-process, one unit after the other), then its rerun.

Prints wall times (process start to exit, and the sweep's own time from sweep.json,
which includes starting Ray), the Ray-over-local ratio of each, the time to start and
stop a local Ray instance alone, and checks that the two backends wrote the same
profiles. Exits 1 if a rerun computed anything.

Usage: python benchmarks/bench_sweep.py [--lengths 64,128] [--samples 2] [--probes 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any


def sweep(out: Path, backend: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run one ``lostmid sweep`` process; its wall time and what sweep.json says."""
    command = [
        sys.executable,
        "-m",
        "lostmid.cli",
        "sweep",
        "--task",
        "measure",
        "--models",
        "tiny-qwen2,tiny-gpt2",
        "--seeds",
        "0-1",
        "--lengths",
        args.lengths,
        "--param",
        f"samples={args.samples}",
        "--param",
        f"probes={args.probes}",
        "--backend",
        backend,
        "--out",
        str(out),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"sweep failed ({backend}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    written = json.loads((out / "sweep.json").read_text())
    return {"wall": wall, "sweep": written["seconds"], "counts": written["counts"], **written}


def ray_start_seconds() -> float:
    """Wall time of ``ray.init`` + ``ray.shutdown`` as the sweep calls them, in a fresh process."""
    code = (
        "import time; t = time.perf_counter(); import ray; "
        "from lostmid.runs.backend import start_ray; start_ray(None); ray.shutdown(); "
        "print(time.perf_counter() - t)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def max_relative_difference(a: Path, b: Path, units: list[dict[str, Any]]) -> float:
    """Largest |ray - local| / local over every position of every unit's profile."""
    worst = 0.0
    for unit in units:
        x = json.loads((a / unit["result"]).read_text())["influence"]
        y = json.loads((b / unit["result"]).read_text())["influence"]
        worst = max(worst, max(abs(p - q) / abs(q) for p, q in zip(x, y, strict=True)))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", default="64,128")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--probes", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="keep the sweeps here")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    runs = {}
    for backend in ("ray", "local"):
        runs[backend] = sweep(root / backend, backend, args)
        runs[f"{backend} rerun"] = sweep(root / backend, backend, args)

    print(
        f"lostmid sweep, measure 2 models x 2 seeds x lengths {args.lengths} "
        f"(samples {args.samples}, probes {args.probes}); {date.today()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load avg "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(f"{'run':<13} {'wall s':>8} {'sweep s':>8} {'done':>5} {'reused':>6} {'failed':>6}")
    for name, run in runs.items():
        c = run["counts"]
        print(
            f"{name:<13} {run['wall']:8.2f} {run['sweep']:8.2f} {c['done']:5d} "
            f"{c['reused']:6d} {c['failed']:6d}"
        )
    for kind in ("", " rerun"):
        ray, local = runs[f"ray{kind}"], runs[f"local{kind}"]
        print(
            f"ray / local{kind or ' first run'}: wall {ray['wall'] / local['wall']:.2f}x, "
            f"sweep {ray['sweep'] / max(local['sweep'], 1e-9):.2f}x"
        )
    print(f"of which starting and stopping a local Ray instance alone: {ray_start_seconds():.2f} s")
    diff = max_relative_difference(root / "ray", root / "local", runs["ray"]["units"])
    print(f"profiles, ray vs local: max relative difference {diff:.2e}")
    units = sum(runs["ray"]["counts"].values())
    if any(runs[f"{b} rerun"]["counts"]["reused"] != units for b in ("ray", "local")):
        sys.exit("a rerun computed units it should have reused")


if __name__ == "__main__":
    main()
