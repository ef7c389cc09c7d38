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

Then the pooled rule itself on that null (``--replicates`` nulls of S seeds, S = the
run's seeds and ``--many`` seeds drawn from them): the share of each verdict when the
growth is read raw and when each seed's noise growth
(:func:`lostmid.train.claims.noise_growth`) is taken off first, beside both verdicts on
the run's own checkpoints. The dead zone and the U are taken as given (the most a null
can reach).

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
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--many", type=int, default=10)
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
    pooled_on_null(args.run, args.replicates, args.many)


def pooled_on_null(run: Path, replicates: int, many: int) -> None:
    """The pooled valley rule on nulls, raw and with each seed's noise growth taken off."""
    from collections import Counter

    from lostmid.compare.pretraining import readouts
    from lostmid.stats import seed_interval
    from lostmid.train.claims import noise_growth, valley_verdict
    from lostmid.train.run import saved_checkpoints

    seeds = []
    for path in sorted(run.glob("train/seed-*/dynamics.json")):
        measured = [c.measurement for c in saved_checkpoints(path.parent, until=10**9)]
        first, last = measured[0], measured[-1]
        assert first is not None and last is not None
        p0 = np.asarray(first.influence)
        rel1 = float(np.median(np.asarray(last.influence_stderr) / np.asarray(last.influence)))
        start = readouts(p0, "binned")["log10_ptv"]
        real = readouts(np.asarray(last.influence), "binned")["log10_ptv"] - start
        seeds.append((p0, rel1, start, real, noise_growth(first, last)))

    def verdict(values: list[float]) -> str:
        return valley_verdict(seed_interval(values), True, True)

    raw = [g for *_, g, _ in seeds]
    off = [g - b for *_, g, b in seeds]
    print(f"\nthe run's own: raw growth {np.round(raw, 3).tolist()} -> {verdict(raw)}; "
          f"noise growth {np.round([b for *_, b in seeds], 3).tolist()}, less it "
          f"{np.round(off, 3).tolist()} -> {verdict(off)}")  # fmt: skip
    rng = np.random.default_rng(1)
    print("\n| seeds | read | " + " | ".join(("reproduced", "partly", "inconclusive",
          "not reproduced")) + " |\n|---|---|---|---|---|---|")  # fmt: skip
    for count in (len(seeds), many):
        tally: dict[str, Counter[str]] = {"raw": Counter(), "less noise": Counter()}
        for _ in range(replicates):
            picks = range(len(seeds)) if count == len(seeds) else rng.integers(0, len(seeds), count)
            raw_null, off_null = [], []
            for i in picks:
                p0, rel1, start, _, bias = seeds[i]
                again = p0 * np.exp(rng.normal(0.0, rel1, p0.size))
                g = readouts(again, "binned")["log10_ptv"] - start
                raw_null.append(g)
                off_null.append(g - bias)
            tally["raw"][verdict(raw_null)] += 1
            tally["less noise"][verdict(off_null)] += 1
        for read, counts in tally.items():
            words = ("reproduced", "partly", "inconclusive", "not reproduced")
            shares = " | ".join(f"{counts[v] / replicates:.1%}" for v in words)
            print(f"| {count} | {read} | {shares} |", flush=True)


if __name__ == "__main__":
    main()
