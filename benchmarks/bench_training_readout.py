"""The training valley claim's readout on a null where the later profile is only noisier.

A training run measures its influence profile at every checkpoint; the profile at the
last checkpoint carries 3-4x the relative error of the one at step 0 (the trained
model's influence is spread thinner over the held-out windows). The valley claim reads
the growth of log10 peak-to-valley between the two. Read by the single smallest
position, a noisier profile reads deeper: the extreme of a noisy estimate is biased.
This script takes each seed's saved step-0 profile from a reproduce run's
``train/seed-N/dynamics.json``, draws it again with the last checkpoint's median
relative error (``--draws`` times; nothing else changes: the null), and prints the
growth each readout reads on that null beside what it reads on the run's own last
checkpoint.

    .venv/bin/python benchmarks/bench_training_readout.py RUN_FOLDER
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    from lostmid.compare.pretraining import readouts

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a reproduce --out with train/seed-N/")
    parser.add_argument("--draws", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(
        "| seed | T | relative s.e. step 0 / last | growth read on the run: single / binned "
        "| on the null: single (share > 0) / binned (share > 0) |"
    )
    print("|---|---|---|---|---|")
    for path in sorted(args.run.glob("train/seed-*/dynamics.json")):
        records = json.loads(path.read_text())["records"]
        first, last = records[0]["influence"], records[-1]["influence"]
        p0, s0 = np.array(first["profile"]), np.array(first["stderr"])
        p1, s1 = np.array(last["profile"]), np.array(last["stderr"])
        rel0, rel1 = float(np.median(s0 / p0)), float(np.median(s1 / p1))

        def growth(profile: np.ndarray, method: str, start: np.ndarray = p0) -> float:
            return readouts(profile, method)["log10_ptv"] - readouts(start, method)["log10_ptv"]

        null = {m: [] for m in ("single", "binned")}
        for _ in range(args.draws):
            again = p0 * np.exp(rng.normal(0.0, rel1, p0.size))
            for method, values in null.items():
                values.append(growth(again, method))
        single, binned = (np.array(null[m]) for m in ("single", "binned"))
        print(
            f"| {path.parent.name} | {p0.size} | {rel0:.3f} / {rel1:.3f} | "
            f"{growth(p1, 'single'):+.3f} / {growth(p1, 'binned'):+.3f} | "
            f"{single.mean():+.3f} ({(single > 0).mean():.0%}) / "
            f"{binned.mean():+.3f} ({(binned > 0).mean():.0%}) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
