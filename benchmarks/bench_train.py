"""Benchmark ``lostmid train``: end-to-end time, tokens/s, instrumentation overhead.

Runs the same training twice, side by side: instrumented (the measurements at every
checkpoint: held-out loss per position, learning signal, influence profile, residual
strengths, theory; plus the plots) and bare (``measure.enabled = False``; checkpoints
and resume state are still written, so both pay the same I/O). Prints a table.

    .venv/bin/python benchmarks/bench_train.py                 # tiny preset, default steps
    .venv/bin/python benchmarks/bench_train.py --steps 300     # a quicker look

Overhead = (wall_instrumented - wall_bare) / wall_bare (target <= 15%); the
timer-based share measure_s / train_s of the instrumented run is printed too, since
it does not depend on the two runs seeing the same machine load.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from lostmid.train import preset, run_training


def _run(config: Any, out: Path) -> tuple[float, Any]:
    start = time.perf_counter()
    result = run_training(config, out=out, overwrite=True)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--steps", type=int, default=None, help="default: the preset's")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-bare", action="store_true", help="only the instrumented run")
    args = parser.parse_args()

    config = preset(args.preset)
    config = replace(config, seed=args.seed, steps=args.steps or config.steps)
    print(
        f"preset {config.preset}: {config.model.family} {config.model.layers} layers x "
        f"{config.model.hidden}, context {config.model.context}, batch {config.batch_size}, "
        f"{config.steps} steps; torch threads {torch.get_num_threads()}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        wall_i, dyn_i = _run(config, Path(tmp) / "instrumented")
        rows = [("instrumented", wall_i, dyn_i)]
        if not args.skip_bare:
            bare = replace(config, probe=replace(config.probe, enabled=False))
            wall_b, dyn_b = _run(bare, Path(tmp) / "bare")
            rows.append(("bare", wall_b, dyn_b))

    print()
    print(
        f"{'run':<13} {'wall s':>8} {'train s':>8} {'measure s':>10} {'ckpt io s':>10} {'tok/s':>8}"
    )
    for name, wall, dyn in rows:
        t = dyn.metadata["timings_s"]
        print(
            f"{name:<13} {wall:8.1f} {t['train']:8.1f} {t.get('measure', 0.0):10.2f} "
            f"{t.get('checkpoint_io', 0.0):10.2f} {dyn.tokens_per_second:8.0f}"
        )
    t = dyn_i.metadata["timings_s"]
    share = (t["measure"] + t.get("plots", 0.0)) / t["train"]
    print(f"\nmeasurement share of training time (timers, instrumented run): {share:.1%}")
    if len(rows) == 2:
        print(f"overhead, side by side (wall): {(wall_i - wall_b) / wall_b:+.1%}  (target <= 15%)")
    print(f"end to end (instrumented): {wall_i / 60:.1f} min  (target <= 10 min on 2 CPU cores)")

    print(
        f"\n{'step':>6} {'tokens':>10} {'train loss':>11} {'held-out':>9} {'peak/valley':>12} "
        f"{'measure s':>10}"
    )
    for c in dyn_i.checkpoints:
        m = c.measurement
        print(
            f"{c.step:>6} {c.tokens_seen:>10,} {m.train_loss:>11.3f} "
            f"{m.heldout_loss:>9.3f} {m.influence_summary.peak_to_valley:>12.3g} "
            f"{sum(m.timings_s.values()):>10.2f}"
        )


if __name__ == "__main__":
    main()
