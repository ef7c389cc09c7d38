"""Benchmark ``lostmid retrieve`` scoring: examples per second, teacher-forced and greedy.

The model is the qwen2-0.5b shape at random init (timing does not depend on the
weights). A tokenizer is needed to turn Liu et al.'s prompts into tokens; none is
downloaded: by default the script trains a small byte-level BPE tokenizer (``tokenizers``
library, ``--bpe-vocab`` tokens) on kv prompts of another seed, which gives prompts of a
realistic length (Liu et al. report about 4K tokens at 75 pairs with their models);
``--tokenizer bytes`` uses lostmid's byte tokenizer instead (about 80 tokens a record).
Prints a table: tokens per prompt, examples per second, tokens per second.

    .venv/bin/python benchmarks/bench_retrieve.py                          # 75 pairs, 2 examples
    .venv/bin/python benchmarks/bench_retrieve.py --pairs 10 --examples 8  # a quicker look
    .venv/bin/python benchmarks/bench_retrieve.py --model tiny-qwen2 --device cuda
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import torch

from lostmid.behaviour.decoding.generate import greedy_decode, teacher_forced
from lostmid.behaviour.decoding.tokenizers import ByteTokenizer, HFTokenizer, Tokenizer
from lostmid.behaviour.score import encode_examples
from lostmid.behaviour.tasks import make_examples
from lostmid.behaviour.tasks.kv import kv_example
from lostmid.models import load_model


def train_bpe(vocab: int, pairs: int) -> Tokenizer:
    """A byte-level BPE tokenizer trained here on kv prompts (seed 12345, not the test's)."""
    from tokenizers import Tokenizer as RawTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = RawTokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    texts = [kv_example(seed=12345, index=i, pairs=pairs, gold_index=0).prompt for i in range(40)]
    raw.train_from_iterator(texts, trainer)
    return HFTokenizer(PreTrainedTokenizerFast(tokenizer_object=raw), f"bpe-{vocab}")


def _time(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2-0.5b")
    parser.add_argument("--pairs", type=int, default=75)
    parser.add_argument("--examples", type=int, default=2, help="examples per mode")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--tokenizer", choices=("bpe", "bytes"), default="bpe")
    parser.add_argument("--bpe-vocab", type=int, default=1024)
    parser.add_argument("--extra-tokens", type=int, default=4)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()

    tokenizer = ByteTokenizer() if args.tokenizer == "bytes" else train_bpe(args.bpe_vocab, 75)
    loaded = load_model(args.model, init="random", device=args.device, dtype=args.dtype)
    gold = (args.pairs // 2,)
    examples = make_examples("kv", positions=gold, examples=args.examples, pairs=args.pairs)
    prompts, targets = encode_examples(examples, tokenizer)
    prompt_tokens = float(np.mean([len(p) for p in prompts]))
    new = [len(t) + args.extra_tokens for t in targets]
    print(
        f"{args.model} ({loaded.num_layers} layers x {loaded.hidden_size}, {args.dtype}, "
        f"{args.device}), kv {args.pairs} pairs, tokenizer {tokenizer.name}: "
        f"{prompt_tokens:.0f} prompt tokens, {np.mean([len(t) for t in targets]):.0f} value "
        f"tokens; torch threads {torch.get_num_threads()}, batch {args.batch_size}"
    )
    common = {"batch_size": args.batch_size, "vocab_size": loaded.vocab_size}
    seconds = {
        "teacher-forced": _time(lambda: teacher_forced(loaded.model, prompts, targets, **common)),
        "greedy": _time(lambda: greedy_decode(loaded.model, prompts, new, **common)),
    }
    print(f"\n{'mode':<16} {'examples':>8} {'seconds':>9} {'examples/s':>11} {'prompt tok/s':>13}")
    for mode, s in seconds.items():
        n = len(examples)
        print(f"{mode:<16} {n:>8} {s:>9.1f} {n / s:>11.4f} {n * prompt_tokens / s:>13.0f}")


if __name__ == "__main__":
    main()
