"""Does ``torch.compile`` pay on the real-checkpoint sections' prompt passes on this CPU?

The real behaviour, link and remedies sections read prompts of about 1,024 tokens (their
lengths differ by a few tokens from item to item and depth to depth) and then decode a
few tokens greedily from the cache. ``lostmid measure`` compiles its Jacobian passes
when the time saved is at least twice the compile cost (``--compile auto``). This
script measures the same trade for the sections' work, on the registry checkpoints:

* eager: ``model(ids, use_cache=True)`` under ``torch.no_grad`` on ``--prompts`` prompts of
  ``--length`` + i tokens (i = 0, 3, 6, ...: every one a new shape, as in the sections);
* compiled: the same model under ``torch.compile(dynamic=True)`` (one graph for every
  length), its first call timed apart (the compile cost);
* the largest difference of the last position's log-softmax between the two.

It prints one row a checkpoint: compile cost, seconds a prompt eager / compiled, the
speed-up and how many prompts repay the compile cost (infinite when compiled is not
faster). Threads: ``torch.get_num_threads()`` (``OMP_NUM_THREADS``).

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/bench_compile_prompt.py
"""

from __future__ import annotations

import argparse
import time

import torch


def prompts(vocab: int, length: int, count: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [torch.randint(0, vocab, (1, length + 3 * i), generator=generator) for i in range(count)]


def last_logp(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        out = model(input_ids=ids, use_cache=True)
    return torch.log_softmax(out.logits[0, -1].float(), -1)


def one(name: str, length: int, count: int) -> str:
    from lostmid.models.spec import ModelSpec

    model = ModelSpec(name).load(init="pretrained").model
    rows = prompts(model.config.vocab_size, length, count)
    last_logp(model, rows[0][:, :64])  # warm the kernels' first use
    begin = time.perf_counter()
    eager = [last_logp(model, r) for r in rows]
    eager_s = (time.perf_counter() - begin) / count
    compiled = torch.compile(model, dynamic=True)
    begin = time.perf_counter()
    first = last_logp(compiled, rows[0])
    first_s = time.perf_counter() - begin
    begin = time.perf_counter()
    later = [first] + [last_logp(compiled, r) for r in rows[1:]]
    compiled_s = (time.perf_counter() - begin) / max(count - 1, 1)
    cost = max(first_s - compiled_s, 0.0)
    diff = max(float((a - b).abs().max()) for a, b in zip(eager, later, strict=True))
    saved = eager_s - compiled_s
    repay = f"{cost / saved:.0f}" if saved > 0 else "never"
    return (
        f"| {name} | {length} | {count} | {cost:.1f} | {eager_s:.2f} / {compiled_s:.2f} | "
        f"{eager_s / compiled_s:.2f}x | {repay} | {diff:.1e} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="smollm2-135m,gemma3-270m")
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--prompts", type=int, default=6)
    args = parser.parse_args()
    print(f"threads: {torch.get_num_threads()}")
    print(
        "| checkpoint | tokens | prompts | compile s | s a prompt eager / compiled | "
        "speed-up | prompts to repay | max log p difference |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        print(one(name, args.length, args.prompts), flush=True)


if __name__ == "__main__":
    main()
