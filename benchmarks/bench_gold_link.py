"""Structure and behaviour on the same prompts (issue 25, part 2): does the gold span's
influence on the answer say where a real model loses what it read?

    python benchmarks/bench_gold_link.py --model smollm2-135m --out results/gold-link \
        --length 1024 --distractors 4 --per-depth 20

The study of ``lostmid reproduce --real-link`` (:func:`lostmid.behaviour.link.run.
link_run`; :mod:`lostmid.behaviour.link` says what is measured, the section
:mod:`lostmid.reproduce.real_link` the rule) at any size: RULER's
multi-key needle prompted as ``lostmid retrieve`` renders it, per example greedy
correctness and the gold needle's share of the answer's gradient and of measure's
Jacobian norm, the random-init twin as the control. Resumable, and a larger
``--per-depth`` grows a finished run (OUT/examples.jsonl, one line an example); the
summary is OUT/link.json and OUT/link.png. Prints the table of docs/BENCHMARKS.md.

``--shared-prefill N`` (issue 27: as fast as the hardware allows) times instead N
pretrained examples two ways, alternating in one process: the greedy answer read from
a prefill of its own (``greedy_decode``) beside the gradient pass, as before, and
``link_example``'s greedy answer continued from the gradient pass's cache; it checks
that the records are equal (the reach bit for bit, the answer's tokens).

    python benchmarks/bench_gold_link.py --model gemma3-270m --shared-prefill 10
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from lostmid.behaviour.link.design import LinkScale
from lostmid.behaviour.link.run import link_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--distractors", type=int, default=4)
    parser.add_argument("--per-depth", type=int, default=20)
    parser.add_argument("--twin-per-depth", type=int, default=5)
    parser.add_argument("--budget", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shared-prefill", type=int, default=0, metavar="N")
    args = parser.parse_args()
    scale = LinkScale(
        "bench",
        (args.model,),
        args.length,
        args.per_depth,
        args.distractors,
        twin_per_depth=args.twin_per_depth,
        budget=args.budget,
    )
    if args.shared_prefill:
        shared_prefill(scale, args.model, args.seed, args.shared_prefill)
        return
    summary = link_run(scale.design(args.model, args.seed), args.out, console=Console(stderr=True))
    print("| depth | correct | Jacobian share | gradient share | twin's Jacobian share |")
    print("| --- | --- | --- | --- | --- |")
    for r in summary["by_depth"]:
        print(
            f"| {r['depth']} | {r['correct']}/{r['n']} | {r['jacobian_share']:.4g} | "
            f"{r['gradient_share']:.4g} | {r['twin_jacobian_share']:.4g} |"
        )
    for score, verdict in summary["link"].items():
        print(score, json.dumps(verdict))


def shared_prefill(scale: LinkScale, model: str, seed: int, examples: int) -> None:
    """Each of ``examples`` (depths in turn) both ways; times and equality."""
    import os
    import time

    import numpy as np
    import torch

    from lostmid.behaviour.decoding.answers import answer_correct
    from lostmid.behaviour.decoding.generate import greedy_decode
    from lostmid.behaviour.decoding.prompts import prompt_format
    from lostmid.behaviour.decoding.tokenizers import tokenizer_for_model
    from lostmid.behaviour.link.example import link_example, link_prompt
    from lostmid.influence.gold import gold_span_influence
    from lostmid.models import load_model

    print(f"load average {os.getloadavg()[0]:.2f}; torch threads {torch.get_num_threads()}")
    design = scale.design(model, seed)
    loaded = load_model(model, init="pretrained")
    tokenizer = tokenizer_for_model(model)
    fmt = prompt_format(str(design["chat_template"]), tokenizer, "on")

    def separate(depth: int, index: int) -> tuple[dict, list[int]]:
        ex, ids, span = link_prompt(tokenizer, fmt, design, depth, index)
        with torch.no_grad():
            (said,) = greedy_decode(
                loaded.model, [ids], int(design["budget"]), batch_size=1, device=loaded.input_device
            )
        reply = tokenizer.decode(said)
        right = answer_correct(str(design["scoring"]), reply, ex.references)
        reach = gold_span_influence(
            loaded, ids, span, tokenizer.encode(ex.target), probes=int(design["probes"]), seed=index
        )
        return {"right": right, "reply": reply, **reach.record()}, said

    times: dict[str, list[float]] = {"separate": [], "shared": []}
    same = 0
    depths = design["depths"]
    for k in range(examples):
        depth, index = depths[k % len(depths)], k // len(depths)
        t0 = time.perf_counter()
        old, said = separate(depth, index)
        t1 = time.perf_counter()
        new = link_example(loaded, tokenizer, fmt, design, depth, index)
        t2 = time.perf_counter()
        times["separate"].append(t1 - t0)
        times["shared"].append(t2 - t1)
        equal = all(new[key] == value for key, value in old.items())
        same += equal
        print(
            f"depth {depth} #{index}: {len(said)} tokens, right {old['right']}/{new['right']}, "
            f"records {'equal' if equal else 'DIFFER: ' + str((old, new))}; "
            f"{t1 - t0:.2f} s -> {t2 - t1:.2f} s"
        )
    a, b = np.mean(times["separate"]), np.mean(times["shared"])
    print(
        f"{model} at {design['length']} tokens: {a:.2f} s -> {b:.2f} s an example "
        f"({a / b:.2f}x); records equal in {same} of {examples}"
    )


if __name__ == "__main__":
    main()
