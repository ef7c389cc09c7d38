"""The pretrained-vs-twins readouts on constructed studies: how often each says
"pretraining deepens the valley" when the truth is no change (the pretrained profiles
only noisier) and when the valley is truly deeper, through the function the claims use
(:func:`lostmid.compare.pretraining.compare_pretraining`).

    python benchmarks/bench_readout.py                       # the issue's null and +1, +1.5
    python benchmarks/bench_readout.py --repeats 200 --sigma 0.5 --spike-rate 0
    python benchmarks/bench_readout.py --noise-from studies/checkpoints-L512

Each repeat draws N inputs for the pretrained model (lognormal noise of ``--sigma`` nats
a position with rare ``--spike``-fold spikes) and for S twins (``--twin-sigma``), all
with the expected profile of :func:`lostmid.compare.nulls.u_profile` (the null) or the
pretrained one :func:`~lostmid.compare.nulls.deepened` by ``--decades``. Printed per
readout and case: the verdicts' rates, the mean estimate against the truth, the
coverage of the 95% interval and its mean width. ``--noise-from`` first prints the noise
of a saved study (the log-sd across inputs of each position, pretrained and twins).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from lostmid.compare.nulls import deepened, noisy_inputs, u_profile
from lostmid.compare.pretraining import READOUT_METHODS, compare_pretraining, readouts


def case(args: argparse.Namespace, readout: str, inputs: int, decades: float) -> dict:
    rng = np.random.default_rng(args.seed + inputs * 1000 + int(decades * 100))
    twin_expected = u_profile(args.length)
    pre_expected = deepened(twin_expected, decades)
    truth = (
        readouts(pre_expected, readout)["log10_ptv"] - readouts(twin_expected, readout)["log10_ptv"]
    )
    verdicts, values, covered, widths, outside = [], [], [], [], 0
    for _ in range(args.repeats):
        pre = noisy_inputs(pre_expected, inputs, args.sigma, rng, args.spike_rate, args.spike)
        twins = np.stack(
            [noisy_inputs(twin_expected, inputs, args.twin_sigma, rng) for _ in range(args.twins)]
        )
        c = compare_pretraining(pre, twins, readout=readout, draws=args.draws)
        change = c.difference["log10_ptv"]
        verdicts.append(c.deepens.verdict)
        values.append(change.value)
        covered.append(change.low <= truth <= change.high)
        widths.append(change.high - change.low)
        outside += not (change.low <= change.value <= change.high)
    n = len(verdicts)
    return {
        "readout": readout,
        "inputs": inputs,
        "decades": decades,
        "truth": round(truth, 3),
        "reproduced": verdicts.count("reproduced") / n,
        "not reproduced": verdicts.count("not reproduced") / n,
        "inconclusive": verdicts.count("inconclusive") / n,
        "mean estimate": round(float(np.mean(values)), 3),
        "coverage": round(float(np.mean(covered)), 3),
        "width": round(float(np.mean(widths)), 3),
        "point outside its interval": outside / n,
    }


def study_noise(folder: Path) -> None:
    """The log-sd across inputs of each position (nats), per cell and model, median and
    90th percentile over positions."""
    for path in sorted(folder.glob("profiles/*/L*/*/*.npz")):
        with np.load(path) as data:
            rows = np.asarray(data["profiles"], dtype=np.float64)
        if rows.shape[0] < 2:
            continue
        logs = np.log(np.maximum(rows, 1e-300))
        sd = logs.std(axis=0, ddof=1)
        cell = "/".join(path.relative_to(folder / "profiles").parts)
        print(
            f"{cell}: {rows.shape[0]} inputs, log-sd a position median {np.median(sd):.2f}, "
            f"90th pct {np.percentile(sd, 90):.2f}, position 1 {sd[0]:.2f}, last {sd[-1]:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--length", type=int, default=2048)
    parser.add_argument("--inputs", default="4,8")
    parser.add_argument("--twins", type=int, default=3)
    parser.add_argument("--sigma", type=float, default=1.3)
    parser.add_argument("--twin-sigma", type=float, default=0.1)
    parser.add_argument("--spike-rate", type=float, default=0.002)
    parser.add_argument("--spike", type=float, default=30.0)
    parser.add_argument("--decades", default="0,1,1.5")
    parser.add_argument("--readouts", default=",".join(READOUT_METHODS))
    parser.add_argument("--draws", type=int, default=200, help="bootstrap draws a repeat")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise-from", type=Path, help="a study folder: print its noise")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    if args.noise_from is not None:
        study_noise(args.noise_from)
    print(
        f"L = {args.length}, {args.twins} twins, pretrained noise sigma {args.sigma} nats, "
        f"spikes {args.spike:g}x at rate {args.spike_rate}, twins sigma {args.twin_sigma}; "
        f"{args.repeats} repeats a case; load {os.getloadavg()[0]:.2f}"
    )
    rows = []
    start = time.perf_counter()
    for readout in args.readouts.split(","):
        for inputs in (int(x) for x in args.inputs.split(",")):
            for decades in (float(x) for x in args.decades.split(",")):
                row = case(args, readout, inputs, decades)
                rows.append(row)
                print(
                    f"{readout:6s} N={inputs:2d} truth {row['truth']:+.2f}: reproduced "
                    f"{row['reproduced']:.2f}, not {row['not reproduced']:.2f}, inconclusive "
                    f"{row['inconclusive']:.2f}; mean estimate {row['mean estimate']:+.2f}, "
                    f"coverage {row['coverage']:.2f}, width {row['width']:.2f}, point outside "
                    f"{row['point outside its interval']:.2f}",
                    flush=True,
                )
    print(f"{time.perf_counter() - start:.0f} s, load {os.getloadavg()[0]:.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
