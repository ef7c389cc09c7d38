"""Structure and behaviour on the same prompts (issue 25, part 2): does the gold span's
influence on the answer say where a real model loses what it read?

    python benchmarks/bench_gold_link.py --model smollm2-135m --out results/gold-link \
        --length 1024 --distractors 4 --per-depth 20

The study of ``lostmid reproduce --real-link`` (:func:`lostmid.reproduce.real_link.
link_run`, its module docstring says what is measured and the rule) at any size: RULER's
multi-key needle prompted as ``lostmid retrieve`` renders it, per example greedy
correctness and the gold needle's share of the answer's gradient and of measure's
Jacobian norm, the random-init twin as the control. Resumable, and a larger
``--per-depth`` grows a finished run (OUT/examples.jsonl, one line an example); the
summary is OUT/link.json and OUT/link.png. Prints the table of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from lostmid.reproduce.real_link import LinkScale, link_run


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


if __name__ == "__main__":
    main()
