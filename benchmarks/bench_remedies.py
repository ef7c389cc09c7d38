"""Benchmark ``lostmid remedies``: wall time per remedy and seed, and the default scale's
time estimated from a quick run.

Runs ``run_remedies`` (``--quick`` by default, every training-time remedy, 3 seeds) into
``--out`` (resumable: a rerun with the same ``--out`` reuses finished stages and reports
their saved times), then prints one row per remedy: seconds per seed spent training and
in total (evaluation, influence, plots included), and the estimate for the default
scale: training time x (default steps x row length) / (quick ones), the rest x (default
evaluations x held-out examples) / (quick ones), summed over remedies and seeds.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/bench_remedies.py --out results/bench-remedies
    .venv/bin/python benchmarks/bench_remedies.py --from results/bench-remedies/remedies.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch


def _evaluations(steps: int, every: int) -> int:
    from lostmid.train.config import checkpoint_steps

    return len(set(checkpoint_steps(steps)) | set(range(0, steps + 1, every)))


def summarise(document: dict[str, Any], stages: Path) -> None:
    from lostmid.behaviour.training.task import sequence_length
    from lostmid.remedies.config import REMEDIES_SCALES, RemediesConfig
    from lostmid.remedies.training import train_config

    config = document["config"]
    quick, default = REMEDIES_SCALES["quick"], REMEDIES_SCALES["default"]
    steps = config["steps"] or config["scale"]["steps"]
    # training time ~ steps x tokens a row (the default's rows are longer: more pairs)
    rows = [sequence_length(train_config(RemediesConfig(quick=q), 0).task) for q in (True, False)]
    step_ratio = default.steps / steps * rows[1] / rows[0]
    eval_ratio = (_evaluations(default.steps, default.eval_every) * default.eval_examples) / (
        _evaluations(steps, quick.eval_every) * (config["examples"] or quick.eval_examples)
    )
    print(
        f"{'remedy':22s} {'seeds':>5s} {'train s/seed':>13s} {'total s/seed':>13s} "
        f"{'default est. s':>15s}"
    )
    total = estimate = 0.0
    for record in document["remedies"]:
        name = record["name"].replace(":", "_")
        saved = [json.loads(p.read_text()) for p in sorted(stages.glob(f"train-{name}-seed*.json"))]
        runs = [s["result"] for s in saved]
        if not runs:
            continue
        train = sum(r["train_seconds"] for r in runs)
        wall = sum(s["seconds"] for s in saved)  # the whole stage: training, evaluation, files
        guess = train * step_ratio + (wall - train) * eval_ratio
        total += wall
        estimate += guess
        print(
            f"{record['name']:22s} {len(runs):5d} {train / len(runs):13.1f} "
            f"{wall / len(runs):13.1f} {guess:15.0f}"
        )
    print(f"{'all':22s} {'':5s} {'':13s} {total:13.0f} {estimate:15.0f}")
    print(
        f"quick run: {total / 60:.1f} min in its stages; default scale estimated "
        f"{estimate / 60:.0f} min (steps x{step_ratio:.1f}, evaluation x{eval_ratio:.1f}); "
        f"torch threads {torch.get_num_threads()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench-remedies"))
    parser.add_argument("--default", action="store_true", help="the default scale, not --quick")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--remedies", default=None, help="comma-separated (default: all)")
    parser.add_argument(
        "--from", dest="source", type=Path, default=None, help="summarise a finished run"
    )
    args = parser.parse_args()
    if args.source is not None:
        summarise(json.loads(args.source.read_text()), args.source.parent / "stages")
        return
    from rich.console import Console

    from lostmid.remedies.config import TRAINING_DEFAULT, RemediesConfig
    from lostmid.remedies.run import run_remedies

    config = RemediesConfig(
        remedies=TRAINING_DEFAULT if args.remedies is None else tuple(args.remedies.split(",")),
        quick=not args.default,
        seeds=args.seeds,
    )
    begin = time.perf_counter()
    run_remedies(config, out=args.out, console=Console())
    print(f"wall time of this invocation: {time.perf_counter() - begin:.0f} s")
    summarise(json.loads((args.out / "remedies.json").read_text()), args.out / "stages")


if __name__ == "__main__":
    main()
