"""Choosing the depth dose-response's setting: the structural span at init, the cost.

    python benchmarks/bench_depth_dose.py [--seeds 0-5] [--depths 2,4,8] [--time]
    python benchmarks/bench_depth_dose.py --trial --depth 8 --steps 1500
    python benchmarks/bench_depth_dose.py --summary results/depth-dose/dose.json

For each candidate retrieval task (kv or mqar; records; key length; queries per row)
builds untrained models at each depth (same width as the ``retrieval-depth-H`` presets)
and measures the record influence at init on held-out prompts exactly as ``lostmid
train --task`` does at step 0 (:func:`lostmid.behaviour.training.evaluate.evaluate_checkpoint`:
the influence of every prompt token on the query's last position, mean over each
record's tokens). Prints per depth the span I(1) / min_r I(r) and S = ln(I(1) / I(P))
over seeds (min, mean, max). ``--time``: CPU seconds of one training step and of one
evaluation at each depth for the chosen setting (one thread; under load these are upper
bounds). ``--trial``: trains the chosen setting at one depth for ``--steps`` steps and
prints the accuracy by record at each evaluation (does the deep model learn?).
``--summary``: prints the readouts of a finished design's ``dose.json`` (``lostmid sweep
--config benchmarks/depth_dose.toml``), every number with its 95% t interval over seeds.

The chosen setting is the ``retrieval-depth-H`` preset family
(:func:`lostmid.behaviour.training.config._depth_preset`).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from lostmid.behaviour.training.config import resolve_retrieval_config, retrieval_preset
from lostmid.behaviour.training.data import MaskedTrainer, RetrievalBatches
from lostmid.behaviour.training.evaluate import HeldOut, evaluate_checkpoint
from lostmid.behaviour.training.learning import structural_primacy, structural_span
from lostmid.behaviour.training.run import RetrievalHooks, run_retrieval_training
from lostmid.behaviour.training.task import RetrievalTask, sequence_length

CHOSEN = "retrieval-depth-8"
CANDIDATES = {
    "kv 8 records": RetrievalTask(task="kv", pairs=8, key_chars=1, queries=8),
    "kv 12 records (chosen)": retrieval_preset(CHOSEN).task,
    "kv 16 records": RetrievalTask(task="kv", pairs=16, key_chars=1, queries=8),
    "kv 16 records, 2-char keys": RetrievalTask(task="kv", pairs=16, key_chars=2, queries=4),
    "mqar 16 records": RetrievalTask(task="mqar", pairs=16, vocab=64, queries=4),
    "mqar 32 records": RetrievalTask(task="mqar", pairs=32, vocab=128, queries=8),
}


def _config(task: RetrievalTask, layers: int, seed: int):  # type: ignore[no-untyped-def]
    base = resolve_retrieval_config(CHOSEN, layers=layers, seed=seed)
    return dataclasses.replace(base, task=task, eval_examples=1, signal_examples=0)


def record_influence(task: RetrievalTask, layers: int, seed: int) -> np.ndarray:
    """The record influence at init of a model of the preset's shape at this depth."""
    from lostmid.train.model import build_model

    config = _config(task, layers, seed)
    model = build_model(config.resolved_train().model, seed)
    point = evaluate_checkpoint(
        model, HeldOut.build(config), config, step=1, tokens_seen=0, train_loss=None
    )
    return np.asarray(point.record_influence)


def spans(seeds: list[int], depths: list[int]) -> None:
    print("task | L prompt | H | span I(1)/min I: min mean max | S = ln I(1)/I(P): mean")
    for name, task in CANDIDATES.items():
        prompt = len(task.example(0, 0, 0).prompt_ids or task.example(0, 0, 0).prompt.encode())
        for h in depths:
            rows = [record_influence(task, h, s) for s in seeds]
            span = np.array([structural_span(r) for r in rows])
            s_val = np.array([structural_primacy(r) for r in rows])
            print(
                f"{name} | {prompt} | {h} | {span.min():.1f} {span.mean():.1f} {span.max():.1f}"
                f" | {s_val.mean():.2f}"
            )


def timing(depths: list[int], repeats: int = 10) -> None:
    print("H | row tokens | CPU s per training step | CPU s per evaluation")
    for h in depths:
        config = resolve_retrieval_config(f"retrieval-depth-{h}" if h in (2, 4, 8) else CHOSEN,
                                          layers=h)  # fmt: skip
        train = config.resolved_train()
        from lostmid.train.model import build_model

        model = build_model(train.model, 0)
        length = sequence_length(config.task)
        trainer = MaskedTrainer(
            model, train, RetrievalBatches(config.task, train.batch_size, 0, length)
        )
        trainer.train_step()
        begin = time.process_time()
        for _ in range(repeats):
            trainer.train_step()
        step = (time.process_time() - begin) / repeats
        heldout = HeldOut.build(config)
        begin = time.process_time()
        evaluate_checkpoint(model, heldout, config, step=1, tokens_seen=0, train_loss=None)
        evaluation = time.process_time() - begin
        print(f"{h} | {length} | {step:.3f} | {evaluation:.2f}")


def trial(depth: int, steps: int, seed: int) -> None:
    config = resolve_retrieval_config(CHOSEN, layers=depth, steps=steps, seed=seed)
    config = dataclasses.replace(config, eval_every=max(steps // 12, 1))
    begin = time.perf_counter()

    def show(c) -> None:  # type: ignore[no-untyped-def]
        acc = " ".join(f"{p.accuracy:.2f}" for p in c.positions)
        print(f"step {c.step} ({time.perf_counter() - begin:.0f} s): mean "
              f"{c.summary.mean_accuracy:.2f} | {acc}", flush=True)  # fmt: skip

    with tempfile.TemporaryDirectory() as tmp:
        run_retrieval_training(
            config, out=Path(tmp) / "run", hooks=RetrievalHooks(on_checkpoint=show)
        )


def _iv(interval: dict | None, digits: int = 2) -> str:
    if interval is None:
        return "n/a"
    if interval["ci_low"] is None:
        return f"{interval['estimate']:.{digits}f} (n=1)"
    return (
        f"{interval['estimate']:.{digits}f} [{interval['ci_low']:.{digits}f}, "
        f"{interval['ci_high']:.{digits}f}]"
    )


def summary(path: Path) -> None:
    import json

    record = json.loads(path.read_text())
    print("arm | seeds | CPU s/run | wall s/run | span I1/min I | S | B | B (probability) "
          "| T slope tokens/record | final mean | final gap | final primacy | final recency "
          "| midpoint primacy | eta~rho Spearman | eta~rho W1 | eta~influence Spearman "
          "| influence~rho W1")  # fmt: skip
    for arm in record["arms"]:
        st, le, fi, si = arm["structural"], arm["learning"], arm["final"], arm["signal"]
        print(
            " | ".join(
                [
                    arm["arm"],
                    str(len(arm["seeds"])),
                    _iv(arm["cpu_seconds"], 0),
                    _iv(arm["wall_seconds"], 0),
                    _iv(st["span"], 1),
                    _iv(st["primacy"]),
                    _iv(le["order"]),
                    _iv(le["order_probability"]),
                    _iv(le["time_slope_tokens_per_record"], 0),
                    _iv(fi["mean"]),
                    _iv(fi["gap"]),
                    _iv(fi["primacy"]),
                    _iv(fi["recency"]),
                    _iv(le["midpoint"]["primacy"]),
                    _iv(si["eta_vs_rho"]["spearman"]),
                    _iv(si["eta_vs_rho"]["w1"], 3),
                    _iv(si["eta_vs_influence"]["spearman"]),
                    _iv(si["influence_vs_rho"]["w1"], 3),
                ]
            )
        )
    for arm in record["arms"]:
        times = " ".join(_iv(t, 0).split(" ")[0] for t in arm["learning"]["half_time_tokens"])
        final = " ".join(_iv(t).split(" ")[0] for t in arm["final"]["accuracy"])
        mid = arm["learning"]["midpoint_accuracy"]
        mids = "n/a" if mid is None else " ".join(_iv(t).split(" ")[0] for t in mid)
        print(f"{arm['arm']}: half-time tokens by record {times}")
        print(f"{arm['arm']}: accuracy by record at the midpoint {mids}; final {final}")
    for v in record["variants"]:
        print(
            f"{v['arm']} - {v['against']} (paired): S {_iv(v['structural_primacy'])}, "
            f"B {_iv(v['order'])}, final mean {_iv(v['final_mean'])}, "
            f"gap {_iv(v['final_gap'])}"
        )
    verdict = record["dose_response"]
    if verdict is not None:
        print(f"dose-response: {verdict['verdict']} ({verdict['reason']}); per-seed slopes "
              f"{verdict['seed_slopes']}; dose {_iv(verdict['dose'])}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-5")
    parser.add_argument("--depths", default="2,4,8")
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--trial", action="store_true")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--summary", type=Path, default=None)
    args = parser.parse_args()
    if args.summary is not None:
        summary(args.summary)
        return
    torch.set_num_threads(1)
    first, _, last = args.seeds.partition("-")
    seeds = list(range(int(first), int(last or first) + 1))
    depths = [int(h) for h in args.depths.split(",")]
    if args.trial:
        trial(args.depth, args.steps, args.seed)
        return
    spans(seeds, depths)
    if args.time:
        timing(depths)


if __name__ == "__main__":
    main()
