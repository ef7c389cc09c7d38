"""Structure and behaviour on the same prompts (issue 25, part 2): does the gold span's
influence on the answer say where a real model loses what it read?

    python benchmarks/bench_gold_link.py --model smollm2-135m --out results/gold-link \
        --length 1024 --distractors 4 --per-depth 6

RULER's multi-key needle (``niah-multikey``, the calibrated difficulty of the retrieve run:
4 distractor needles at 1024 tokens put SmolLM2's middle accuracy at 0.62), chat template
and answer prefix as ``lostmid retrieve`` renders them. For each example at each depth:
greedy correctness (the value in the answer), and the gold needle's reach on the answer
(:func:`lostmid.influence.gold.gold_span_influence`: the gradient of the answer's log p
w.r.t. the needle's input embeddings, its share of the prompt's, and measure's Jacobian
norm share, 1 probe). The link rule (:func:`lostmid.stats.link.link_verdict`, stated
before the run) is applied to both shares. The same prompts through a random-init twin
(seed 0) give the control: what the topology alone gives the needle at each depth.
Resumable: one JSON line per example in OUT/examples.jsonl.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from lostmid.behaviour.needles import needles_example
from lostmid.behaviour.prompts import prompt_format
from lostmid.behaviour.tokenizers import tokenizer_for_model
from lostmid.influence.gold import gold_span_influence
from lostmid.models import load_model
from lostmid.stats import wilson_interval
from lostmid.stats.link import link_verdict

DEPTHS = (0, 25, 50, 75, 100)


def _token_span(offsets: list[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    inside = [i for i, (a, b) in enumerate(offsets) if b > start and a < end and b > a]
    return inside[0], inside[-1] + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--distractors", type=int, default=4)
    parser.add_argument("--per-depth", type=int, default=6)
    parser.add_argument("--budget", type=int, default=16)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    lines = args.out / "examples.jsonl"
    done = [json.loads(x) for x in lines.read_text().splitlines()] if lines.exists() else []
    seen = {(r["model"], r["depth"], r["index"]) for r in done}
    tok = tokenizer_for_model(args.model)
    fmt = prompt_format("auto", tok, "on")
    for label, init in (("pretrained", "pretrained"), ("twin0", "random")):
        loaded = load_model(args.model, init=init, seed=0)
        for index in range(args.per_depth):
            for depth in DEPTHS:
                if (label, depth, index) in seen:
                    continue
                t0 = time.perf_counter()
                ex = needles_example(
                    seed=0, index=index, depth=depth, length=args.length,
                    variant="niah-multikey", distractors=args.distractors,
                    count_tokens=lambda s: len(tok.encode(s)),
                )  # fmt: skip
                text = fmt.text(ex, tok)
                user = ex.prompt[: len(ex.prompt) - len(ex.answer_prefix)]
                at = text.find(user)
                assert at >= 0, "the chat rendering keeps the prompt verbatim"
                enc = tok.tokenizer(
                    text, return_offsets_mapping=True, add_special_tokens=fmt.add_special_tokens
                )
                ids, offsets = list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
                s0, s1 = ex.spans[0]
                span = _token_span(offsets, at + s0, at + s1)
                answer = tok.encode(ex.target)
                right = None
                if init == "pretrained":
                    with torch.no_grad():
                        out = loaded.model.generate(
                            torch.tensor([ids]), max_new_tokens=args.budget, do_sample=False
                        )
                    said = tok.decode(out[0, len(ids) :].tolist())
                    right = ex.value.lower() in said.lower()
                reach = gold_span_influence(loaded, ids, span, answer, probes=1, seed=index)
                record = {
                    "model": label,
                    "depth": depth,
                    "index": index,
                    "tokens": len(ids),
                    "span": list(span),
                    "right": right,
                    **reach.record(),
                    "seconds": time.perf_counter() - t0,
                }
                with lines.open("a") as handle:
                    handle.write(json.dumps(record) + "\n")
                done.append(record)
                print(
                    f"{label} depth {depth} #{index}: right={right} "
                    f"grad share {reach.gradient_share:.4f} ({record['seconds']:.1f} s)",
                    flush=True,
                )
        del loaded
    summarise(done, args.out)


def summarise(done: list[dict], out: Path) -> None:
    pre = [r for r in done if r["model"] == "pretrained"]
    twin = [r for r in done if r["model"] == "twin0"]
    report: dict = {"by_depth": []}
    for depth in DEPTHS:
        p = [r for r in pre if r["depth"] == depth]
        t = [r for r in twin if r["depth"] == depth]
        k = sum(bool(r["right"]) for r in p)
        lo, hi = wilson_interval(k, len(p)) if p else (float("nan"), float("nan"))
        row = {
            "depth": depth,
            "n": len(p),
            "accuracy": k / len(p) if p else None,
            "wilson": [lo, hi],
            "grad_share": float(np.mean([r["gradient_share"] for r in p])) if p else None,
            "jac_share": float(np.mean([r["jacobian_share"] for r in p])) if p else None,
            "twin_jac_share": float(np.mean([r["jacobian_share"] for r in t])) if t else None,
            "twin_grad_share": float(np.mean([r["gradient_share"] for r in t])) if t else None,
        }
        report["by_depth"].append(row)
        print(json.dumps(row))
    if len(pre) >= 4:
        for score in ("gradient_share", "jacobian_share"):
            v = link_verdict(
                [r["depth"] for r in pre], [bool(r["right"]) for r in pre],
                [r[score] for r in pre],
            )  # fmt: skip
            report[score] = v.record()
            print(score, json.dumps(v.record()))
    (out / "summary.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
