"""Benchmark a needle sweep on a real checkpoint against its floor (issue 27, target 3).

``lostmid retrieve`` on ``--model`` (default SmolLM2-135M-Instruct from its registry
package): RULER's multi-key needle at ``--length`` tokens, ``--depths`` depths x
``--examples`` examples, ``--distractors`` distractor needles, the chat template and
answer prefix as the model expects, greedy decoding (``--passes generate``). What is
timed is retrieve's own ``score`` stage (the forwards; not loading, not writing).

The floor is the work the sweep cannot avoid, timed in the same process on the loaded
model: every prompt read once and every answer token but the last read after it, at the
rate of one prefill of a prompt of the sweep's length (its tokens per second, best of
two), plus nothing else:

    floor_s = (sum over examples of prompt tokens + new tokens - 1) / prefill rate

Target: the sweep's score stage <= 1.3x the floor. Decoding is one token a forward, so
it reads every weight per token; the script also prints the decoding steps' share so the
reader sees where the rest goes.

    LOSTMID_CACHE=... .venv/bin/python benchmarks/bench_needle_floor.py           # 5 x 20
    .venv/bin/python benchmarks/bench_needle_floor.py --examples 4 --length 1024  # a look
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch

from lostmid.behaviour.retrieve.config import RetrieveConfig
from lostmid.behaviour.retrieve.run import run_retrieve
from lostmid.models import load_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--length", type=int, default=2048)
    parser.add_argument("--depths", type=int, default=5)
    parser.add_argument("--examples", type=int, default=20, help="per depth")
    parser.add_argument("--distractors", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    start_load = os.getloadavg()
    config = RetrieveConfig(
        model=args.model,
        task="niah-multikey",
        length=args.length,
        positions=args.depths,
        examples=args.examples,
        distractors=args.distractors,
        passes="generate",
        chat_template="auto",
        batch_size=args.batch_size,
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        run_retrieve(config, out=out)
        result = json.loads((out / "retrieve.json").read_text())
        rows = [json.loads(line) for line in (out / "predictions.jsonl").open()]
    score_s = float(result["metadata"]["timings_s"]["score"])
    new_tokens = int(result["prompt"]["new_tokens"])
    tokens = [int(r["tokens"]) for r in rows]
    read = sum(t + new_tokens - 1 for t in tokens)

    loaded = load_model(args.model, init="pretrained")
    ids = torch.randint(100, 10_000, (1, max(tokens)))
    loaded.adapter.prefill(loaded.model, ids)  # warm-up
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        loaded.adapter.prefill(loaded.model, ids)
        best = min(best, time.perf_counter() - t0)
    rate = ids.shape[1] / best
    floor_s = read / rate
    # one decoding step (batch 1) after a prompt of this length, for the decoding share
    cache = loaded.adapter.prefill(loaded.model, ids)
    one = torch.tensor([[7]])
    t0 = time.perf_counter()
    steps = 4
    for s in range(steps):
        _, cache = loaded.adapter.continue_from(loaded.model, cache, one, ids.shape[1] + s)
    step_s = (time.perf_counter() - t0) / steps
    decode_s = len(tokens) * (new_tokens - 1) * step_s
    end_load = os.getloadavg()
    print(
        f"{args.model}, niah-multikey at {args.length} tokens, {args.depths} depths x "
        f"{args.examples} examples ({len(tokens)}), {new_tokens} new tokens, torch threads "
        f"{torch.get_num_threads()}, load {start_load[0]:.2f} -> {end_load[0]:.2f}"
    )
    print(f"score stage           {score_s:9.1f} s ({score_s / len(tokens):.2f} s an example)")
    print(f"prefill rate          {rate:9.1f} tokens/s ({best:.2f} s for {ids.shape[1]} tokens)")
    print(f"floor                 {floor_s:9.1f} s ({read} tokens read)")
    print(f"decoding steps        {decode_s:9.1f} s ({step_s * 1000:.0f} ms a step, batch 1)")
    print(f"score / floor         {score_s / floor_s:9.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
