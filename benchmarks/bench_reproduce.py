"""Benchmark ``lostmid reproduce``: wall time of ``--quick`` (target <= 3 min on 2 CPU
cores) and of the default scale (target <= 15 min), each in a fresh output folder so
nothing is reused, with the time of every stage, the claims table and the noise floors.

Usage: python benchmarks/bench_reproduce.py [--scales quick,default] [--keep DIR]

``--keep DIR`` writes each run to DIR/SCALE (the report stays) instead of a temporary
folder. Run it with ``OMP_NUM_THREADS=2`` on the 2-core reference machine.
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
from typing import Any

TARGETS = {"quick": 180.0, "default": 900.0}


def _pm(value: dict[str, float], digits: int = 4) -> str:
    return f"{value['mean']:.{digits}f} +- {value['spread']:.{digits}f}"


def floors(record: dict[str, Any]) -> list[str]:
    """One line per model: the W1 and Spearman floors between seeds, their sampling and
    model-to-model parts, and the inputs per seed a 0.005 floor would take."""
    lines = []
    for model, a in record["models"].items():
        floor = a["scorecard"]["noise_floor"]
        if floor is None:
            lines.append(f"  {model}: one seed, no noise floor")
            continue
        m = floor["metrics"]
        line = (
            f"  {model}: W1 {_pm(m['wasserstein1'])}, Spearman {_pm(m['spearman'], 3)}, "
            f"binned W1 {_pm(m['binned_wasserstein1'])}"
        )
        budget = a["floor_budget"]
        if budget is not None:
            needed = budget["samples_needed"]
            line += (
                f"; sampling {budget['sampling']:.4f} + model-to-model {budget['model']:.4f} "
                f"(parts {budget['parts']}); inputs per seed for {budget['target']:g}: "
                + ("none" if needed is None else str(needed))
            )
        lines.append(line)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", default="quick,default")
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    print(f"# bench_reproduce  {date.today()}")
    for scale in args.scales.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            out = (args.keep or Path(tmp)) / scale
            flag = [] if scale == "default" else [f"--{scale}"]
            start = time.perf_counter()
            cmd = [sys.executable, "-m", "lostmid.cli", "reproduce", *flag, "--out", str(out)]
            subprocess.run([*cmd, "--overwrite"], check=True, stdout=subprocess.DEVNULL)
            wall = time.perf_counter() - start
            record = json.loads((out / "reproduce.json").read_text())
            timings = record["metadata"]["timings_s"]
            target = TARGETS.get(scale)
            verdict = "" if target is None else f"(target <= {target:.0f} s: "
            verdict += "" if target is None else ("met)" if wall <= target else "MISSED)")
            print(f"{scale:<8} wall {wall:7.1f} s  {verdict}")
            for name, seconds in timings.items():
                print(f"  {name:<40} {seconds:7.1f} s")
            print("  noise floor between seeds:")
            print("\n".join(floors(record)))
            print("  claims:")
            for c in record["claims"]:
                print(f"  [{c['verdict']}] {c['claim']} | paper {c['paper']} | ours {c['ours']}")


if __name__ == "__main__":
    main()
