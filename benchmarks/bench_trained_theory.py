"""Which theory explains a trained profile? (issue 24, part 3)

    python benchmarks/bench_trained_theory.py --runs results/cmp   # after the measures below

Expects, per checkpoint, ``RUNS/<name>/s<S>/measure.json`` from
``lostmid measure --model <name> --seed S --length 512 --samples 4 --probes 1`` (S = 0,
1, 2: three independent sets of random-token inputs through the one pretrained model)
and ``RUNS/<name>/compare/compare.json`` from ``lostmid compare --measured ... --predict``
on them (the uniform theory, the position-resolved kernel with the model's own gains,
fitted candidates and baselines, each scored out of sample over the input sets, and the
noise floor between input sets). This script adds the third candidate: a rollout through
the model's *measured* attention (:mod:`lostmid.influence.rollout`; a_l from each
measure.json, attention on that run's own inputs), scored by the same W1 against each
input set's measured profile, and prints every candidate's W1 with its 95% t interval.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from lostmid.compare.metrics import wasserstein1
from lostmid.influence import random_token_ids
from lostmid.influence.rollout import measured_attention, rollout_row
from lostmid.models import load_model
from lostmid.stats import seed_interval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--checkpoints", default="smollm2-135m,gemma3-270m")
    args = parser.parse_args()
    for name in args.checkpoints.split(","):
        folder = args.runs / name
        runs = sorted(folder.glob("s*/measure.json"))
        if not runs:
            print(f"{name}: no measure.json under {folder}")
            continue
        loaded = load_model(name, init="pretrained")
        w1 = []
        for path in runs:
            record = json.loads(path.read_text())
            config = record["config"]
            ids = random_token_ids(
                loaded.vocab_size, config["samples"], config["length"], config["seed"]
            )
            attention = measured_attention(loaded, ids)
            row = rollout_row(attention, record["residual_strength"], config["length"])
            w1.append(wasserstein1(row, np.asarray(record["influence"])))
        rollout = seed_interval(w1)
        print(f"{name}: {len(runs)} input sets at L = {runs[0].parent.name}")
        print(
            f"  rollout through measured attention (zero-parameter): W1 {rollout.estimate:.4f} "
            f"[{rollout.ci_low:.4f}, {rollout.ci_high:.4f}]"
        )
        compare = folder / "compare" / "compare.json"
        if compare.is_file():
            data = json.loads(compare.read_text())
            floor = data["noise_floor"]["metrics"]["wasserstein1"]
            print(
                f"  noise floor between input sets: W1 {floor['mean']:.4f} "
                f"[{floor['ci_low']:.4f}, {floor['ci_high']:.4f}]"
            )
            for cand, c in data["candidates"].items():
                m = c["out_of_sample"]["metrics"]["wasserstein1"]
                print(f"  {cand}: W1 {m['mean']:.4f} [{m['ci_low']:.4f}, {m['ci_high']:.4f}]")
        del loaded


if __name__ == "__main__":
    main()
