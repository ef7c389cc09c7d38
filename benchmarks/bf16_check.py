"""How far a bfloat16 influence profile is from the float64 one, by device and attention.

The same weights (built on the CPU under the seed), the same inputs and the same probes
in every case: only the precision, the device and the attention kernel differ, so the
relative difference at each position is the measurement's rounding error alone. Exact
Jacobians on the tiny model (no probe noise), shared Rademacher probes on the larger one.

    python benchmarks/bf16_check.py [--cases tiny,qwen] [--length-qwen 1024]

Prints one row per case: max and median relative difference from the float64 profile
(the same weights cast to float64), and where the max is. "built" rows load the model as
``lostmid measure --dtype`` does; "cast" rows cast a float32 build. The two agree since
random models are drawn in float32 and then cast (docs/BENCHMARKS.md, GPU check).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
import torch

from lostmid.influence.estimator import influence_profile
from lostmid.influence.inputs import random_token_ids
from lostmid.models.load import load_model


def profile(
    model: str,
    length: int,
    *,
    dtype: str,
    device: str,
    attn: str,
    exact: bool,
    probes: int,
    cast: bool = True,
) -> np.ndarray:
    """cast: float32 weights built on the CPU, then cast (the same weights in every case);
    else built in ``dtype`` as ``lostmid measure --dtype`` builds them."""
    if cast:
        loaded = load_model(model, seed=3, dtype="float32", device="cpu", attn_implementation=attn)
        loaded.model.to(dtype=getattr(torch, dtype), device=device)
        loaded = dataclasses.replace(loaded, dtype=dtype, device=device)
    else:
        loaded = load_model(model, seed=3, dtype=dtype, device=device, attn_implementation=attn)
    ids = random_token_ids(loaded.vocab_size, 2, length, 3)
    result = influence_profile(loaded, ids, probes=probes, seed=3, exact=exact)
    return np.asarray(result.influence, dtype=float)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="tiny,qwen")
    parser.add_argument("--length-qwen", type=int, default=1024)
    args = parser.parse_args()
    cuda = torch.cuda.is_available()
    plans = []
    if "tiny" in args.cases:
        ref = ("tiny-qwen2", 64, "float64", "cpu", "eager", True, 1)
        cases = [
            ("float32", "cpu", "sdpa", True),
            ("bfloat16", "cpu", "sdpa", True),
            ("bfloat16", "cpu", "eager", True),
            ("float32", "cpu", "sdpa", False),
            ("bfloat16", "cpu", "sdpa", False),
        ]
        if cuda:
            cases += [
                ("float32", "cuda", "sdpa", True),
                ("bfloat16", "cuda", "sdpa", True),
                ("bfloat16", "cuda", "eager", True),
                ("float16", "cuda", "sdpa", True),
                ("float32", "cuda", "sdpa", False),
                ("bfloat16", "cuda", "sdpa", False),
            ]
        plans.append((ref, cases))
    if "qwen" in args.cases and cuda:
        n = args.length_qwen
        ref = ("qwen2-0.5b", n, "float64", "cuda", "eager", False, 8)
        cases = [
            ("float32", "cuda", "sdpa", True),
            ("bfloat16", "cuda", "sdpa", True),
            ("bfloat16", "cuda", "eager", True),
        ]
        plans.append((ref, cases))
    for (model, length, rdtype, rdev, rattn, exact, probes), cases in plans:
        t = time.time()
        reference = profile(
            model, length, dtype=rdtype, device=rdev, attn=rattn, exact=exact, probes=probes
        )
        print(
            f"{model} L={length} reference {rdtype} {rdev} {rattn} exact={exact} "
            f"({time.time() - t:.1f} s)",
            flush=True,
        )
        for dtype, device, attn, cast in cases:
            t = time.time()
            got = profile(
                model,
                length,
                dtype=dtype,
                device=device,
                attn=attn,
                exact=exact,
                probes=probes,
                cast=cast,
            )
            rel = np.abs(got - reference) / np.abs(reference)
            how = "cast " if cast else "built"
            print(
                f"  {dtype:9s} {device:4s} {attn:5s} {how} max rel {rel.max():.3g}"
                f" at j={rel.argmax() + 1} median {np.median(rel):.3g}"
                f"  last {rel[-1]:.3g}  ({time.time() - t:.1f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
