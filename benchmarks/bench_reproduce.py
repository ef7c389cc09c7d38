"""Benchmark ``lostmid reproduce``: wall time of ``--quick`` (target <= 3 min on 2 CPU
cores) and of the default scale (target <= 15 min), each in a fresh output folder so
nothing is reused, with the time of every stage.

Usage: python benchmarks/bench_reproduce.py [--scales quick,default]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

TARGETS = {"quick": 180.0, "default": 900.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", default="quick,default")
    args = parser.parse_args()
    print(f"# bench_reproduce  {date.today()}")
    for scale in args.scales.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / scale
            flag = [] if scale == "default" else [f"--{scale}"]
            start = time.perf_counter()
            cmd = [sys.executable, "-m", "lostmid.cli", "reproduce", *flag, "--out", str(out)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            wall = time.perf_counter() - start
            timings = json.loads((out / "reproduce.json").read_text())["metadata"]["timings_s"]
            target = TARGETS.get(scale)
            verdict = "" if target is None else f"(target <= {target:.0f} s: "
            verdict += "" if target is None else ("met)" if wall <= target else "MISSED)")
            print(f"{scale:<8} wall {wall:7.1f} s  {verdict}")
            for name, seconds in timings.items():
                print(f"  {name:<40} {seconds:7.1f} s")


if __name__ == "__main__":
    main()
