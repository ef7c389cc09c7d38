"""Benchmark ``retrieve --design shared`` against ``--design moved``: examples per second,
in one run, and the floor of one prefill per context plus the question tokens.

The model is the qwen2-0.5b shape at random init (timing does not depend on the
weights; ``--layers N`` keeps the shape with fewer layers for a quick look). Prompts are
Liu et al.'s key-value prompts at ``--pairs`` pairs, tokenised by a byte-level BPE
tokenizer trained here (as ``bench_retrieve.py`` does; nothing is downloaded).

* moved: one full prompt per example (the gold pair moved), ``--moved-examples`` of
  them timed (each costs a whole prefill, so a few give the rate);
* shared: ``--contexts`` contexts (one by default), each one's key-value cache kept,
  every record's key asked of it (``--pairs`` examples a context, ``--batch-size``
  questions a row; greedy decoding reads the questions of several contexts a step);
* floor: the one prefill timed alone (it computes one column of logits), scaled to the
  tokens the shared design reads, floor_s = t_prefill * (sum_c T_c + sum_i w_i) / T, with
  T the first context's tokens, T_c each context's and w_i the tokens read after it for
  example i (teacher forcing: question + target - 1; greedy: question + new tokens - 1);
* floor + logits: plus the output layer on the columns whose logits are needed (teacher
  forcing: every target token, with log-softmax; greedy: every new token), timed on its
  own. The prefill-scaled floor leaves these out; on a model with few layers and a large
  vocabulary (qwen2's 151936) they are most of the work.

Targets: shared >= 10x moved, and within 1.5x of the floor.

Prints one table per mode (teacher-forced, greedy) with every number needed.

    .venv/bin/python benchmarks/bench_retrieve_shared.py                      # 24 layers
    .venv/bin/python benchmarks/bench_retrieve_shared.py --layers 2 --moved-examples 2
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from bench_retrieve import train_bpe

from lostmid.behaviour.decoding.generate import greedy_decode, teacher_forced
from lostmid.behaviour.decoding.prompts import encode, prompt_format
from lostmid.behaviour.decoding.shared import shared_scores
from lostmid.behaviour.tasks.kv import kv_example, kv_query, kv_records
from lostmid.models import load_model


def _time(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2-0.5b")
    parser.add_argument("--layers", type=int, default=None, help="override the layer count")
    parser.add_argument("--pairs", type=int, default=75)
    parser.add_argument("--moved-examples", type=int, default=3)
    parser.add_argument("--contexts", type=int, default=1, help="contexts of --pairs records")
    parser.add_argument(
        "--batch-size", default="16", help="questions a forward (shared); a list times each"
    )
    parser.add_argument("--bpe-vocab", type=int, default=1024)
    parser.add_argument("--extra-tokens", type=int, default=4)
    parser.add_argument("--modes", default="teacher,greedy")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()

    tokenizer = train_bpe(args.bpe_vocab, 75)
    overrides = None if args.layers is None else {"num_hidden_layers": args.layers}
    loaded = load_model(
        args.model, init="random", device=args.device, dtype=args.dtype, config_overrides=overrides
    )
    fmt = prompt_format("off", tokenizer)
    shared_examples = []
    for seed in range(args.contexts):
        records = kv_records(seed, 0, args.pairs, 36)
        shared_examples += [kv_query(records, g) for g in range(args.pairs)]
    enc = encode(shared_examples, tokenizer, fmt, shared=True)
    assert enc.contexts is not None and enc.questions is not None
    context_tokens = len(enc.contexts[0])
    golds = np.linspace(0, args.pairs - 1, args.moved_examples).round().astype(int)
    moved = [kv_example(seed=0, index=0, pairs=args.pairs, gold_index=int(g)) for g in golds]
    moved_enc = encode(moved, tokenizer, fmt)
    new_tokens = max(len(t) for t in enc.targets) + args.extra_tokens
    model, adapter = loaded.model, loaded.adapter
    load = os.getloadavg()
    print(
        f"{args.model} ({loaded.num_layers} layers x {loaded.hidden_size}, {args.dtype}, "
        f"{args.device}), kv {args.pairs} pairs, tokenizer {tokenizer.name}: context "
        f"{context_tokens} tokens x {args.contexts}, questions "
        f"{np.mean([len(q) for q in enc.questions]):.1f}, "
        f"targets {np.mean([len(t) for t in enc.targets]):.1f}, moved prompts "
        f"{np.mean([len(p) for p in moved_enc.prompts]):.0f} tokens; torch threads "
        f"{torch.get_num_threads()}, batch {args.batch_size}, packed "
        f"{adapter.packs_exactly(model)}, load "
        f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}"
    )
    context = torch.tensor([enc.contexts[0]], device=loaded.input_device)
    adapter.prefill(model, context)  # warm-up
    prefill = min(_time(lambda: adapter.prefill(model, context)) for _ in range(2))
    batches = [int(b) for b in str(args.batch_size).split(",")]
    head = adapter.lm_head(model)
    hidden = torch.randn(1, 256, loaded.hidden_size, device=loaded.input_device)

    def head_seconds(columns: int, softmax: bool) -> float:
        """The output layer on ``columns`` hidden states (in chunks of 256)."""
        with torch.no_grad():
            one = min(
                _time(
                    lambda: (
                        torch.log_softmax(head(hidden).float(), -1)
                        if softmax
                        else head(hidden).argmax(-1)
                    )
                )
                for _ in range(2)
            )
        return one * columns / hidden.shape[1]

    for mode in args.modes.split(","):
        if mode == "teacher":
            after = [len(q) + len(t) - 1 for q, t in zip(enc.questions, enc.targets, strict=True)]
            moved_s = _time(
                lambda: teacher_forced(model, moved_enc.prompts, moved_enc.targets, batch_size=1)
            )
        else:
            after = [len(q) + new_tokens - 1 for q in enc.questions]
            moved_s = _time(
                lambda: greedy_decode(model, moved_enc.prompts, new_tokens, batch_size=1)
            )
        timed = []
        for batch in batches:
            common = {"batch_size": batch, "device": loaded.input_device}
            if mode == "teacher":
                shared_s = _time(
                    lambda common=common: shared_scores(
                        model, adapter, enc.contexts, enc.questions, enc.targets, **common
                    )
                )
            else:
                shared_s = _time(
                    lambda common=common: shared_scores(
                        model,
                        adapter,
                        enc.contexts,
                        enc.questions,
                        enc.targets,
                        teacher=False,
                        new_tokens=new_tokens,
                        **common,
                    )  # fmt: skip
                )
            timed.append((batch, shared_s))
        read = sum(len(c) for c in {tuple(c) for c in enc.contexts}) + sum(after)
        floor_s = prefill * read / context_tokens
        n_moved, n_shared = len(moved), len(shared_examples)
        if mode == "teacher":
            columns = sum(len(t) for t in enc.targets)
        else:
            columns = n_shared * new_tokens
        logits_s = floor_s + head_seconds(columns, softmax=mode == "teacher")
        rows = [("moved", n_moved, moved_s)]
        rows += [(f"shared b{b}", n_shared, t) for b, t in timed]
        rows += [("floor", n_shared, floor_s), ("floor+logits", n_shared, logits_s)]
        print(
            f"\n{mode}: prefill of the context alone {prefill:.3f} s; {sum(after)} tokens read "
            f"after it; {columns} logit columns needed"
        )
        print(f"{'design':<13} {'examples':>8} {'seconds':>9} {'examples/s':>11}")
        for name, n, seconds in rows:
            print(f"{name:<13} {n:>8} {seconds:>9.2f} {n / seconds:>11.3f}")
        for batch, shared_s in timed:
            speedup = (n_shared / shared_s) / (n_moved / moved_s)
            print(
                f"batch {batch}: shared / moved = {speedup:.1f}x (target >= 10x); shared time "
                f"/ floor = {shared_s / floor_s:.2f}, / floor+logits = "
                f"{shared_s / logits_s:.2f} (target <= 1.5)"
            )


if __name__ == "__main__":
    main()
