"""Benchmark reading a needle item's prompts from a shared prefix against one prefill a
prompt, on the registry checkpoints, with the scores of both.

The prompts are the real-checkpoint behaviour section's at its default scale: RULER's
multi-key needle (``--distractors`` distractor needles), ``--length`` tokens, five
depths (0, 25, 50, 75, 100), ``--items`` items, the model's chat template and answer
prefix, greedy decoding plus the teacher-forced score of the answer. Both ways run the
same function (:func:`lostmid.behaviour.decoding.shared.shared_scores`, the path ``retrieve``
takes on a CPU), once with ``share_prefixes=False`` (one prefill a prompt) and once with
it on (the prompts in sorted order, each continuing from the previous one's cache cut
back to what the two share). Printed per checkpoint: the prompt tokens and those read,
seconds a needle item (five prompts) each way, and how far the scores moved (greedy
tokens equal, largest log-probability difference).

    .venv/bin/python benchmarks/bench_prefix.py --items 4
    .venv/bin/python benchmarks/bench_prefix.py --models smollm2-135m --items 2 --length 512
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from lostmid.behaviour.decoding.prompts import encode, prompt_format
from lostmid.behaviour.decoding.shared import shared_scores
from lostmid.behaviour.decoding.tokenizers import tokenizer_for_model
from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.retrieve.examples import answer_budget, retrieval_examples
from lostmid.models import load_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="smollm2-135m,gemma3-270m")
    parser.add_argument("--items", type=int, default=4)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--distractors", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"needle items at {args.length} tokens, 5 depths, {args.items} items, "
        f"{args.distractors} distractors, {args.threads} threads"
    )
    header = (
        f"{'model':<14}{'prompt tok':>11}{'read tok':>10}{'saved':>7}"
        f"{'s/item alone':>13}{'s/item shared':>14}{'faster':>7}{'greedy =':>9}{'max |dlogp|':>12}"
    )
    print(header)
    for name in args.models.split(","):
        config = RetrieveConfig(
            model=name,
            task="niah-multikey",
            length=args.length,
            positions=5,
            examples=args.items,
            distractors=args.distractors,
            passes="both",
        )
        tokenizer = tokenizer_for_model(name, None, False)
        loaded = load_model(name, init="pretrained")
        fmt = prompt_format(config.chat_template, tokenizer, config.answer_prefix)
        examples, _ = retrieval_examples(config, tokenizer, fmt)
        encoded = encode(examples, tokenizer, fmt)
        new_tokens = answer_budget(examples, encoded, config.extra_tokens)
        contexts = [p[:-1] for p in encoded.prompts]
        questions = [p[-1:] for p in encoded.prompts]
        results = {}
        for share in (False, True):
            reading: dict[str, int] = {}
            start = time.perf_counter()
            scores, said = shared_scores(
                loaded.model, loaded.adapter, contexts, questions, encoded.targets,
                new_tokens=new_tokens, share_prefixes=share, reading=reading,
            )  # fmt: skip
            results[share] = (time.perf_counter() - start, reading, scores, said)
        (t0, _, s0, g0), (t1, r1, s1, g1) = results[False], results[True]
        assert s0 is not None and s1 is not None
        diff = float(np.max(np.abs(s0.logprob - s1.logprob)))
        print(
            f"{name:<14}{r1['context_tokens']:>11}{r1['read_tokens']:>10}"
            f"{1 - r1['read_tokens'] / r1['context_tokens']:>7.0%}"
            f"{t0 / args.items:>13.1f}{t1 / args.items:>14.1f}{t0 / t1:>7.2f}"
            f"{str(g0 == g1):>9}{diff:>12.2e}"
        )
        del loaded


if __name__ == "__main__":
    main()
