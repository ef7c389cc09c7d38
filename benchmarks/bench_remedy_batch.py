"""Teacher forcing of real-checkpoint prompts on a CPU: a left-padded batch of 8 against
one prompt a forward (issue 27: as fast as the hardware allows).

The inference remedies score their prompts teacher-forced (``Remedy.score``); the
prompts of a needle sweep differ by a few tokens, so a batch is left-padded, and on a
CPU a padded batch has no causal fast path and computes its padding. This reads the
first 8 prompts of the real-remedies section's default design (1024 tokens, 4
distractors, no lead-in) both ways, alternating in one process, and prints the time an
example and the log-probabilities of each way (equal but for rounding).

    OMP_NUM_THREADS=1 python benchmarks/bench_remedy_batch.py --model smollm2-135m
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    from dataclasses import replace

    import numpy as np
    import torch

    from lostmid.behaviour.decoding.generate import teacher_forced
    from lostmid.behaviour.decoding.prompts import encode, prompt_format
    from lostmid.behaviour.decoding.tokenizers import tokenizer_for_model
    from lostmid.behaviour.retrieve.examples import retrieval_examples
    from lostmid.models import load_model
    from lostmid.remedies.inference import retrieve_config
    from lostmid.remedies.registry import get_remedy
    from lostmid.reproduce.real_remedies import REAL_REMEDY_SCALES

    print(f"load average {os.getloadavg()[0]:.2f}; torch threads {torch.get_num_threads()}")
    design = REAL_REMEDY_SCALES["default"].remedies_config(args.model, 0)
    config = replace(design, examples=2, lead_in="")
    tokenizer = tokenizer_for_model(args.model)
    loaded = load_model(args.model, init="pretrained")
    fmt = prompt_format(config.chat_template, tokenizer, config.answer_prefix)
    examples, _ = retrieval_examples(
        retrieve_config(config, get_remedy("baseline"), 0), tokenizer, fmt
    )
    encoded = encode(examples, tokenizer, fmt)
    prompts, targets = encoded.prompts[:8], encoded.targets[:8]
    print("prompt tokens", [len(p) for p in prompts])
    best: dict[int, float] = {}
    scores = {}
    for _ in range(args.repeats):
        for size in (8, 1):
            t0 = time.perf_counter()
            scores[size] = teacher_forced(loaded.model, prompts, targets, batch_size=size)
            seconds = (time.perf_counter() - t0) / len(prompts)
            best[size] = min(best.get(size, seconds), seconds)
    gap = float(np.max(np.abs(scores[8].logprob - scores[1].logprob)))
    same = bool(np.array_equal(scores[8].argmax, scores[1].argmax))
    print(
        f"{args.model}: batch of 8 {best[8]:.2f} s, one a forward {best[1]:.2f} s an example "
        f"({best[8] / best[1]:.2f}x, best of {args.repeats}); largest log p difference "
        f"{gap:.1e}, argmax equal: {same}"
    )


if __name__ == "__main__":
    main()
