"""Benchmark of the test command: ``make test`` as the README gives it (ruff, mypy, the
strict docs build, the suite on every core), and with ``--one-process`` also the suite in
one process (``pytest -p no:xdist``) for the ratio on the same machine. Target: ``make
test`` <= 6 min on 2 quiet cores. Run it on a quiet machine, set-up already done.

Usage: python benchmarks/bench_test_command.py [--one-process]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 360.0


def timed(argv: list[str]) -> tuple[float, str]:
    """Seconds ``argv`` took in the repository, and its last line of output."""
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    lines = (done.stdout + done.stderr).strip().splitlines()
    return seconds, f"exit {done.returncode}: {lines[-1] if lines else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one-process", action="store_true")
    args = parser.parse_args()
    print(
        f"bench_test_command {date.today()} on {platform.node()} ({os.cpu_count()} CPUs), "
        f"load {os.getloadavg()[0]:.2f}"
    )
    seconds, last = timed(["make", "test"])
    verdict = "met" if seconds <= TARGET_S else "MISSED"
    print(f"make test: {seconds:.0f} s (target <= {TARGET_S:.0f} s: {verdict}); {last}")
    if args.one_process:
        alone, last = timed([sys.executable, "-m", "pytest", "-p", "no:xdist"])
        print(f"pytest in one process: {alone:.0f} s; {last}")


if __name__ == "__main__":
    main()
