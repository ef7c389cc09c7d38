"""Why influence to 5% relative s.e. at every position is out of reach on a pretrained
model (issue 27, target 3): the per-sample squared norms ||v^T J_j||^2 of SmolLM2 at
L = 2048 on random tokens, one probe a sample, saved as they come (resumable), then:

* the relative s.e. of the influence sqrt(E ||J_j||^2) by position (median, 90th
  percentile, worst) and the samples 1/sqrt(S) would need for 5%;
* the same for the profile's shape (each position's share of the total, a ratio of
  means, jackknifed): does normalising by the total remove the noise? (Only if the
  positions' spikes move with the total.)
* how heavy the tail is: at how many positions one sample holds most of the sum.

Usage: python benchmarks/bench_influence_tail.py [--samples 16] [--length 2048]
[--out DIR] (torch threads from OMP_NUM_THREADS; 10 s a sample on 2 threads here).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np


def collect(model: str, samples: int, length: int, out: Path) -> np.ndarray:
    from lostmid.influence import influence_profile, random_token_ids
    from lostmid.models import load_model

    path = out / f"samples-{length}.npy"
    rows = list(np.load(path)) if path.exists() else []
    if len(rows) >= samples:
        return np.array(rows[:samples])
    loaded = load_model(model, init="pretrained")
    ids = random_token_ids(loaded.vocab_size, samples, length, seed=0)
    for s in range(len(rows), samples):
        start = time.perf_counter()
        profile = influence_profile(loaded, ids[s : s + 1], probes=1, seed=s)
        rows.append(profile.mean_sq)
        out.mkdir(parents=True, exist_ok=True)
        np.save(path, np.array(rows))
        print(f"sample {s + 1}/{samples}: {time.perf_counter() - start:.1f} s", flush=True)
    return np.array(rows)


def quantiles(values: np.ndarray) -> str:
    return " / ".join(f"{np.nanpercentile(values, p):.3f}" for p in (50, 90, 100))


def analyse(x: np.ndarray) -> None:
    count, length = x.shape
    mean = x.mean(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = x.std(0, ddof=1) / np.sqrt(count) / mean / 2  # of the sqrt: half
        total = x.sum(1)
        share = mean / total.mean()
        knife = np.array(
            [np.delete(x, i, 0).mean(0) / np.delete(total, i).mean() for i in range(count)]
        )
        se_share = np.sqrt((count - 1) / count * ((knife - knife.mean(0)) ** 2).sum(0))
        shape = se_share / share / 2
        top = x.max(0) / x.sum(0)
    corr = [np.corrcoef(x[:, j], total)[0, 1] for j in range(length)]
    print(f"S = {count} samples of one probe, L = {length}")
    print("relative s.e. (median / 90th percentile / worst position):")
    print(f"  the influence sqrt(E||J_j||^2): {quantiles(raw)}")
    print(f"  its shape (share of the total, jackknife): {quantiles(shape)}")
    print(f"  a position's value against the sample's total: median r {np.nanmedian(corr):.3f}")
    for name, rel in (("influence", raw), ("shape", shape)):
        worst = (np.nanmax(rel) / 0.05) ** 2 * count
        median = (np.nanmedian(rel) / 0.05) ** 2 * count
        print(
            f"  1/sqrt(S) to 5% ({name}): {worst:.0f} samples at the worst position, "
            f"{median:.0f} at the median one"
        )
    print(
        f"one sample holds > 90% of the sum at {int((top > 0.9).sum())} positions, > 50% at "
        f"{int((top > 0.5).sum())} of {length} (the median position's largest sample: "
        f"{np.nanmedian(top):.2f})"
    )
    worst_positions = np.argsort(-np.nan_to_num(raw))[:5] + 1
    print(f"worst positions: {worst_positions.tolist()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--length", type=int, default=2048)
    parser.add_argument("--out", type=Path, default=Path("results/bench-influence-tail"))
    args = parser.parse_args()
    analyse(collect(args.model, args.samples, args.length, args.out))


if __name__ == "__main__":
    main()
