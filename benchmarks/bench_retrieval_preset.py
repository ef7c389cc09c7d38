"""The retrieval preset over seeds: wall time and accuracy reached (issue 10's target).

    python benchmarks/bench_retrieval_preset.py [--preset retrieval-tiny] [--seeds 0,1,2]

Trains ``lostmid train --task kv`` (``run_retrieval_training``) once per seed into a temporary
folder and prints one row per seed: wall and training seconds, final mean teacher-
forced argmax accuracy with its Wilson interval, the accuracy at the first, middle and
last gold index, gap / primacy / recency, and the link (Spearman of accuracy and of
log-prob by gold index against the influence of those records) at init and after
training; then over seeds: mean accuracy by gold index, and gap, primacy and recency as
mean ± 95% t half-width, beside the gap's noise floor (sampling noise alone, at the mean
accuracy).
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from lostmid.behaviour.training import resolve_retrieval_config, run_retrieval_training
from lostmid.behaviour.training.evaluate import gap_noise_floor
from lostmid.stats import seed_interval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="retrieval-tiny")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=None)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"{time.strftime('%Y-%m-%d')} {platform.machine()} {platform.processor() or ''}")
    header = (
        "seed | wall s | train s | mean acc [95% CI] | first / middle / last | gap | primacy "
        "| recency | link init / final"
    )
    print(header)
    print("-" * len(header))
    finals, rows, shape = [], [], []
    for seed in seeds:
        config = resolve_retrieval_config(args.preset, seed=seed, steps=args.steps)
        with tempfile.TemporaryDirectory() as tmp:
            result = run_retrieval_training(config, out=Path(tmp) / "run")
        s = result.final.summary
        acc = [p.accuracy for p in result.final.positions]
        finals.append(s.mean_accuracy)
        rows.append(acc)
        shape.append((s.gap.estimate, s.primacy.estimate, s.recency.estimate))

        def fmt(x: float | None) -> str:
            return "n/a" if x is None else f"{x:+.2f}"

        print(
            f"{seed} | {result.wall_seconds:.0f} | {result.train_seconds:.0f} | "
            f"{s.mean_accuracy:.3f} [{s.mean_ci_low:.3f}, {s.mean_ci_high:.3f}] | "
            f"{acc[0]:.2f} / {acc[len(acc) // 2]:.2f} / {acc[-1]:.2f} | "
            f"{s.gap.estimate:.2f} | {s.primacy.estimate:+.2f} | {s.recency.estimate:+.2f} | "
            f"acc {fmt(result.initial.link_accuracy)} / {fmt(result.final.link_accuracy)}, "
            f"logprob {fmt(result.initial.link_logprob)} / {fmt(result.final.link_logprob)}"
        )
    print(f"mean final accuracy over {len(seeds)} seeds: {sum(finals) / len(finals):.3f}")
    print(
        "accuracy by gold index, mean over seeds:", " ".join(f"{a:.2f}" for a in np.mean(rows, 0))
    )
    for name, values in zip(("gap", "primacy", "recency"), zip(*shape, strict=True), strict=True):
        iv = seed_interval(values)
        print(
            f"{name}: {iv.estimate:+.3f} [{iv.ci_low:+.3f}, {iv.ci_high:+.3f}] (95% t over seeds)"
        )
    floor = gap_noise_floor(float(np.mean(finals)), len(rows[0]), config.eval_examples)
    print(f"gap noise floor at accuracy {np.mean(finals):.2f}: {floor:.3f}")


if __name__ == "__main__":
    main()
