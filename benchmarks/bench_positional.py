"""Step 0, nothing fitted: does the position-resolved theory predict the measured profile?

For each model (full-size presets at random init, 3 seeds by default), every seed is
measured as ``lostmid measure`` does (influence profile of the final hidden state at
t = L on random tokens, branch gains per position, MLP gain and coherence, layer masks:
:func:`lostmid.ablate.run.measure_rung` on the ``real`` rung, i.e. the model
unchanged) and scored as ``lostmid compare --predict`` does with several seeds
(:func:`lostmid.compare.compare_measurements`): the zero-parameter predictions per seed,
the fitted baselines out of sample (fit on the other seeds, scored on the held-out
one), and the seed noise floor.

Issue 9's target: ``predicted:positional`` W1 <= 0.015 and no worse than the best
baseline scored out of sample. Run (one model at a time fits the 2-core machine):

    OMP_NUM_THREADS=2 python benchmarks/bench_positional.py --models gpt2 --length 512
    OMP_NUM_THREADS=2 python benchmarks/bench_positional.py --models qwen2-0.5b --length 256

The vocabulary is cut to ``--vocab-size`` (512) as ``lostmid reproduce`` does: only the
blocks shape the hidden-state Jacobian of random-token inputs, and the embedding rows
are drawn with the same scale.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

import torch

from lostmid.ablate.config import AblationConfig
from lostmid.ablate.results import score_rung
from lostmid.ablate.rungs import RUNG_SPECS, measure_rung

TARGET_W1 = 0.015
SHOWN = (
    "predicted:positional",
    "predicted:positional-rollout",
    "predicted:jacobian",
    "predicted:rollout",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["gpt2", "qwen2-0.5b"])
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--probes", type=int, default=2)
    parser.add_argument("--directions", type=int, default=4)
    parser.add_argument("--vocab-size", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        f"# bench_positional {datetime.datetime.now():%Y-%m-%d %H:%M} {platform.machine()} "
        f"threads={torch.get_num_threads()} torch {torch.__version__}; L={args.length}, "
        f"{args.seeds} seeds x {args.samples} samples x {args.probes} probes, "
        f"{args.directions} gain directions, vocab {args.vocab_size}"
    )
    for model in args.models:
        config = AblationConfig(
            model=model,
            length=args.length,
            seeds=args.seeds,
            samples=args.samples,
            probes=args.probes,
            rungs="real",
            seed=args.seed,
            vocab_size=args.vocab_size,
            gain_directions=args.directions,
        )
        start = time.perf_counter()
        measurements = [measure_rung(config, "real", seed) for seed in config.seed_list()]
        rung = score_rung(RUNG_SPECS["real"], measurements)
        seconds = time.perf_counter() - start
        floor = rung.noise_floor
        assert floor is not None
        base = rung.best_baseline
        assert base is not None
        print()
        print(
            f"## {model}: L = {args.length}, H = {measurements[0].layers}, "
            f"{seconds:.0f} s; measured log10 peak/valley {rung.log10_peak_to_valley:.2f}"
        )
        print(f"{'candidate':<30} {'k':>2} {'W1 (per seed / held out)':>26} {'binned W1':>10}")
        for name in (*SHOWN, base.name):
            c = rung.candidates[name]
            w1, binned = c.wasserstein1, c.binned_wasserstein1
            print(
                f"{name:<30} {c.parameter_count:>2} {w1.mean:>17.4f} +- {w1.spread:.4f} "
                f"{binned.mean:>10.4f}"
            )
        b = floor.metrics["binned_wasserstein1"]
        print(
            f"{'noise floor (seed pairs)':<30} {'':>2} {floor.wasserstein1.mean:>17.4f} +- "
            f"{floor.wasserstein1.spread:.4f} {b.mean:>10.4f}"
        )
        positional = rung.candidates["predicted:positional"].wasserstein1
        print(
            f"target W1 <= {TARGET_W1}: {'met' if positional.mean <= TARGET_W1 else 'missed'}; "
            f"no worse than the best baseline held out ({base.name} "
            f"{base.wasserstein1.mean:.4f}): "
            f"{'yes' if positional.mean <= base.wasserstein1.mean else 'no'}"
        )
        a = sum(m.measurement.residual_strength for m in measurements) / len(measurements)
        print("a_l (jacobian, mean over seeds): " + " ".join(f"{v:.2f}" for v in a))


if __name__ == "__main__":
    main()
