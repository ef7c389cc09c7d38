"""The retrieval-training learning signal with the vocabulary projection on the answer's
columns only, against every column's (the earlier computation, whose other columns
were never read).

At each evaluation of a retrieval training run, :func:`lostmid.behaviour.training.signal.
record_learning_signal` differentiates the answer's loss with respect to the input
embeddings of the held-out signal examples. It now asks the model for the logits of
the answer's A columns alone (``logits_to_keep``); before, the projection ran on all T
columns it reads. This script builds a preset's untrained model and held-out examples
(the same ones a run evaluates), times the signal both ways (interleaved, ``--repeats``
times each, the median) and checks that eta and eta_gold agree.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/bench_signal_logits.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch


def main() -> None:
    import lostmid.behaviour.training.signal as signal_module
    from lostmid.behaviour.training.config import resolve_retrieval_config
    from lostmid.behaviour.training.evaluate import HeldOut
    from lostmid.train.model import build_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="retrieval-valley,retrieval-tiny,mqar-tiny")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"threads: {torch.get_num_threads()}")
    print(
        "| preset | examples x columns read (answer) | vocabulary | all columns ms | "
        "answer's columns ms | speed-up | max relative eta difference |"
    )
    print("|---|---|---|---|---|---|---|")
    keep = signal_module.logits_to_keep_name
    for preset in [p.strip() for p in args.presets.split(",") if p.strip()]:
        config = resolve_retrieval_config(preset)
        heldout = HeldOut.build(config)
        model = build_model(config.train.model, seed=config.train.seed)
        rows = heldout.signal_rows or tuple(range(len(heldout.prompts)))
        inputs = (
            [heldout.prompts[i] for i in rows],
            [heldout.targets[i] for i in rows],
            heldout.spans,
            [int(heldout.positions[i]) for i in rows],
        )
        times: dict[bool, list[float]] = {True: [], False: []}
        results = {}
        for _ in range(args.repeats):
            for kept in (False, True):
                signal_module.logits_to_keep_name = keep if kept else (lambda model: None)
                begin = time.perf_counter()
                results[kept] = signal_module.record_learning_signal(model, *inputs)
                times[kept].append(time.perf_counter() - begin)
        signal_module.logits_to_keep_name = keep
        a, b = results[False].eta, results[True].eta
        diff = float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-30)))
        full, kept_s = statistics.median(times[False]), statistics.median(times[True])
        columns = len(inputs[0][0]) + len(inputs[1][0]) - 1
        print(
            f"| {preset} | {len(rows)} x {columns} ({len(inputs[1][0])}) | "
            f"{model.config.vocab_size} | {1e3 * full:.1f} | {1e3 * kept_s:.1f} | "
            f"{full / kept_s:.2f}x | {diff:.1e} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
