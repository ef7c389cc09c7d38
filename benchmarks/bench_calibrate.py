"""The calibrate remedy's time an example, its filler pass through the output head and
without it (issue 27: as fast as the hardware allows, the same numbers).

Found-in-the-middle calibration (``lostmid.remedies.catalogue.Calibrate``) runs, per
example, a filler pass whose attention weights are the positional prior, then the
scoring pass. The filler pass needs no logits: through the output head it computed
T x vocabulary of them (at Gemma 3's 262,144 entries more than the blocks). This scores
the same items both ways, alternating in one process, with ``lostmid.remedies.inference.
score_remedy`` on the real-remedies section's design (``--examples`` items a depth, the
default's 1024 tokens and 4 distractors), the "before" run with the adapter's base model
called as the whole model (the filler pass through the head, as it was), and checks the
records are equal.

    OMP_NUM_THREADS=1 python benchmarks/bench_calibrate.py --model gemma3-270m --examples 2
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any


class _Whole:
    """The base model's attributes, the whole model's call (the head included)."""

    def __init__(self, model: Any, base: Any) -> None:
        self.model, self.base = model, base

    def __getattr__(self, name: str) -> Any:
        return getattr(self.base, name)

    def __call__(self, **kwargs: Any) -> Any:
        return self.model(**kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--examples", type=int, default=2, help="items a depth")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    from dataclasses import replace

    import torch

    from lostmid.models import load_model
    from lostmid.remedies.catalogue import Calibrate
    from lostmid.remedies.inference import score_remedy
    from lostmid.reproduce.real_remedies import REAL_REMEDY_SCALES

    print(f"load average {os.getloadavg()[0]:.2f}; torch threads {torch.get_num_threads()}")
    scale = REAL_REMEDY_SCALES["default"]
    config = scale.remedies_config(args.model, 0)
    config = replace(config, examples=args.examples)
    adapter = type(load_model(args.model).adapter)  # the family's adapter class
    own_base = adapter.base
    times: dict[str, list[float]] = {"through the head": [], "blocks only": []}
    records = {}
    for _ in range(args.repeats):
        for way in times:
            if way == "through the head":
                adapter.base = lambda self, model: _Whole(model, own_base(self, model))
            try:
                t0 = time.perf_counter()
                record = score_remedy(Calibrate(), config, 0)
                times[way].append(time.perf_counter() - t0)
            finally:
                adapter.base = own_base
            record.pop("wall_seconds", None)
            records.setdefault(way, record)
            assert record == records[way]
    n = 5 * args.examples
    before, after = (min(t) / n for t in times.values())
    same = records["through the head"] == records["blocks only"]
    print(
        f"{args.model}: calibrate {before:.2f} s -> {after:.2f} s an example "
        f"({before / after:.2f}x, best of {args.repeats}, {n} examples incl. the model's "
        f"load); records equal: {same}"
    )


if __name__ == "__main__":
    main()
