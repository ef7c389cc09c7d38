"""Benchmark ``lostmid reproduce`` at the speed of the machine (issue 20), each run in a
fresh output folder so nothing is reused:

* ``--quick`` (target <= 4 min) and the default scale (target <= 15 min) with the local
  backend's stages at once (``--jobs`` = the cores), the time of every stage and the
  claims; with ``--sequential`` also each scale with ``--jobs 1``: the parallel /
  sequential wall-time ratio (target >= 1.7x on 2 cores) and a check that both give the
  same claims;
* ``--busy``: a tiny training run (``train --preset tiny --steps 20``) and ``reproduce
  --quick``, each quiet and then beside one competing CPU-bound process (a busy loop on
  one core): the slowdown (target <= 2.5x on 2 cores, where a fair share is 2x).

Usage: python benchmarks/bench_reproduce.py [--scales quick,default] [--sequential]
[--busy] [--keep DIR]. Run it on a quiet machine: nothing else beside it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

TARGETS = {"quick": 240.0, "default": 900.0}
RATIO_TARGET = 1.7
BUSY_TARGET = 2.5


def _spin(stop: Any) -> None:
    """A CPU-bound competitor: one core, busy until told to stop."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 1103515245 + 12345) % 2**31


def lostmid(*args: str) -> float:
    """Wall seconds of one ``lostmid`` command (its output discarded)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lostmid.cli", *args], check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - start


def reproduce(scale: str, out: Path, jobs: int | None) -> tuple[float, dict[str, Any]]:
    flag = [] if scale == "default" else [f"--{scale}"]
    extra = [] if jobs is None else ["--jobs", str(jobs)]
    wall = lostmid("reproduce", *flag, *extra, "--out", str(out), "--overwrite")
    return wall, json.loads((out / "reproduce.json").read_text())


def beside_a_competitor(*args: str) -> float:
    stop = multiprocessing.Event()
    rival = multiprocessing.Process(target=_spin, args=(stop,))
    rival.start()
    try:
        time.sleep(1.0)  # the competitor is on its core
        return lostmid(*args)
    finally:
        stop.set()
        rival.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", default="quick,default")
    parser.add_argument("--sequential", action="store_true")
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    print(f"# bench_reproduce  {date.today()}  cores {os.cpu_count()}  load {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        for scale in [s for s in args.scales.split(",") if s]:
            wall, record = reproduce(scale, root / scale, None)
            target = TARGETS[scale]
            meta = record["metadata"]
            print(f"{scale:<8} --jobs {meta['backend']['jobs']}: wall {wall:7.1f} s (target <= "
                  f"{target:.0f} s: {'met' if wall <= target else 'MISSED'})")  # fmt: skip
            for name, seconds in sorted(meta["stages"]["seconds"].items(), key=lambda x: -x[1]):
                print(f"  stage {name:<36} {seconds:7.1f} s")
            print(f"  stage compute {sum(meta['stages']['seconds'].values()):.1f} s in all")
            for c in record["claims"]:
                print(f"  [{c['verdict']}] {c['claim'][:90]}")
            if args.sequential:
                seq_wall, seq = reproduce(scale, root / f"{scale}-seq", 1)
                ratio = seq_wall / wall
                same = [c["verdict"] for c in seq["claims"]] == [
                    c["verdict"] for c in record["claims"]
                ]
                print(f"{scale:<8} --jobs 1: wall {seq_wall:7.1f} s; parallel/sequential "
                      f"{ratio:.2f}x (target >= {RATIO_TARGET}x: "
                      f"{'met' if ratio >= RATIO_TARGET else 'MISSED'}); same verdicts: "
                      f"{same}")  # fmt: skip
        if args.busy:
            train = ["train", "--preset", "tiny", "--steps", "20"]
            quiet = lostmid(*train, "--out", str(root / "t-quiet"), "--overwrite")
            busy = beside_a_competitor(*train, "--out", str(root / "t-busy"), "--overwrite")
            print(f"train tiny 20 steps: quiet {quiet:.1f} s, beside a competitor {busy:.1f} s: "
                  f"{busy / quiet:.2f}x (target <= {BUSY_TARGET}x: "
                  f"{'met' if busy / quiet <= BUSY_TARGET else 'MISSED'})")  # fmt: skip
            quick = ["reproduce", "--quick"]
            quiet = lostmid(*quick, "--out", str(root / "q-quiet"), "--overwrite")
            busy = beside_a_competitor(*quick, "--out", str(root / "q-busy"), "--overwrite")
            print(f"reproduce --quick: quiet {quiet:.1f} s, beside a competitor {busy:.1f} s: "
                  f"{busy / quiet:.2f}x (target <= {BUSY_TARGET}x: "
                  f"{'met' if busy / quiet <= BUSY_TARGET else 'MISSED'})")  # fmt: skip


if __name__ == "__main__":
    main()
