"""Which theory explains a trained profile? (issue 24, part 3)

    python benchmarks/bench_trained_theory.py --runs results/cmp   # after the measures below

Expects, per checkpoint, ``RUNS/<name>/s<S>/measure.json`` from
``lostmid measure --model <name> --init pretrained --seed S --length 512 --samples 4
--probes 1`` (S = 0, 1, 2: three independent sets of random-token inputs through the one
pretrained model) and ``RUNS/<name>/compare/compare.json`` from ``lostmid compare
--measured ... --predict`` on them (the uniform theory, the position-resolved kernel with
the model's own gains, fitted candidates and baselines, each scored out of sample over
the input sets, and the noise floor between input sets).

This script adds the rollouts of :mod:`lostmid.influence.rollout`, each scored by the
same W1 against each input set's measured profile (attention read on that run's own
inputs, one eager forward pass an input with the family's ``eager_attention_forward``
wrapped to keep, per layer, the head-mean weights, the value-norm weighted weights and
the peer's q.k statistics):

* the rollout through the measured attention (head mean) with the measured Jacobian a_l
  (``residual_strength``) and with the peer's lambda_l (``residual_strength_forward``);
* the peer's residual-aware rollout as their code computes it: the modelled attention
  of :func:`~lostmid.influence.rollout.peer_attention` (these models have no ALiBi: a
  per-head diagonal boost from the mean unscaled q.k), the peer's lambda_l; and the same
  with q.k at the model's own softmax scale (their code leaves it out);
* the value-norm weighted attention (||W_O^h v_j^h||, renormalised rows) with the
  peer's lambda_l and with the Jacobian a_l.

It prints every candidate's W1 with its 95% t interval over the input sets and the share
of the profile each puts on token 1 (the attention sink) and on the target, next to the
measured shares; ``--json`` writes the same numbers and the profiles (each normalised to
sum 1, averaged over the input sets).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lostmid.compare.metrics import wasserstein1
from lostmid.influence import random_token_ids
from lostmid.influence.rollout import (
    peer_attention,
    peer_content_scores,
    rollout_row,
    value_norms,
    value_weighted_attention,
)
from lostmid.models import LoadedModel, load_model
from lostmid.models.attention import attention_kernel
from lostmid.stats import seed_interval


@dataclass
class LayerStats:
    """One layer's attention statistics, summed over inputs (divide by ``inputs``)."""

    head_mean: np.ndarray | None = None  # (L, L)
    value_weighted: np.ndarray | None = None  # (L, L)
    diagonal: np.ndarray | None = None  # (n,) the peer's diagonal score (unscaled q.k)
    base: np.ndarray | None = None  # (n,)
    scaling: float = float("nan")  # the model's softmax scale of q.k
    inputs: int = 0

    def add(self, name: str, value: np.ndarray) -> None:
        old = getattr(self, name)
        setattr(self, name, value if old is None else old + value)

    def mean(self, name: str) -> np.ndarray:
        value = getattr(self, name)
        assert value is not None, f"no {name} recorded"
        return value / self.inputs


@dataclass
class Capture:
    layers: list[LayerStats] = field(default_factory=list)


@contextlib.contextmanager
def recording(loaded: LoadedModel) -> Iterator[Capture]:
    """Eager attention whose every call adds its layer's statistics to the capture."""
    model, adapter = loaded.model, loaded.adapter
    modules = [adapter.attention(block) for block in adapter.blocks(model)]
    index = {module: i for i, module in enumerate(modules)}
    modeling: Any = sys.modules[type(modules[0]).__module__]
    if not hasattr(modeling, "eager_attention_forward") or not hasattr(modules[0], "o_proj"):
        raise SystemExit(f"{loaded.spec}: needs a family with eager_attention_forward and o_proj")
    original: Callable[..., tuple[torch.Tensor, torch.Tensor]] = modeling.eager_attention_forward
    capture = Capture([LayerStats() for _ in modules])

    def eager(
        module: torch.nn.Module,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: torch.Tensor | None,
        *args: Any,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        out, weights = original(module, query, key, value, attention_mask, *args, **kwargs)
        stats = capture.layers[index[module]]
        heads = query.shape[1]
        groups = heads // key.shape[1]
        # the peer's q.k: before the softmax scale (their qk_prod), keys per query head
        qk = query.double() @ key.double().repeat_interleave(groups, dim=1).transpose(2, 3)
        diagonal, base = peer_content_scores(qk)
        batch = query.shape[0]
        stats.add("diagonal", diagonal * batch)
        stats.add("base", base * batch)
        w = weights.detach().double()  # (B, n, L, L)
        stats.add("head_mean", w.mean(dim=1).sum(dim=0).numpy())
        norms = value_norms(value.detach().double(), module.o_proj.weight.detach(), heads)
        stats.add("value_weighted", value_weighted_attention(w, norms) * batch)
        scaling = kwargs.get("scaling", args[0] if args else None)
        stats.scaling = float(module.scaling if scaling is None else scaling)
        stats.inputs += batch
        return out, weights

    modeling.eager_attention_forward = eager
    try:
        with torch.no_grad(), attention_kernel(model, "eager"):
            yield capture
    finally:
        modeling.eager_attention_forward = original


def capture_attention(loaded: LoadedModel, ids: torch.Tensor) -> list[LayerStats]:
    """Each layer's statistics over the inputs ``ids`` (B, L), one input a forward pass."""
    base = loaded.adapter.base(loaded.model)
    with recording(loaded) as capture:
        for row in ids:
            base(input_ids=row[None].to(loaded.input_device), use_cache=False)
    return capture.layers


def candidates(
    layers: list[LayerStats], record: dict[str, Any], masks: list[str]
) -> dict[str, np.ndarray]:
    """Every rollout's row at the target, by candidate name."""
    length, target = record["config"]["length"], record["config"]["target"]
    if record["residual_strength_method"] != "jacobian":
        raise SystemExit("measure.json must hold the Jacobian a_l (lostmid measure's default)")
    jacobian = record["residual_strength"]
    forward = record["residual_strength_forward"]
    head_mean = [s.mean("head_mean") for s in layers]
    weighted = [s.mean("value_weighted") for s in layers]
    peer = [
        peer_attention(s.mean("diagonal"), s.mean("base"), length, mask=m)
        for s, m in zip(layers, masks, strict=True)
    ]
    peer_scaled = [
        peer_attention(s.scaling * s.mean("diagonal"), s.scaling * s.mean("base"), length, mask=m)
        for s, m in zip(layers, masks, strict=True)
    ]
    return {
        "measured attention (head mean), Jacobian a_l": rollout_row(head_mean, jacobian, target),
        "measured attention (head mean), peer lambda_l": rollout_row(head_mean, forward, target),
        "peer recipe (modelled attention, unscaled q.k), peer lambda_l": rollout_row(
            peer, forward, target
        ),
        "peer recipe, q.k at the model's scale, peer lambda_l": rollout_row(
            peer_scaled, forward, target
        ),
        "value-norm weighted attention, peer lambda_l": rollout_row(weighted, forward, target),
        "value-norm weighted attention, Jacobian a_l": rollout_row(weighted, jacobian, target),
    }


def interval(values: list[float]) -> str:
    i = seed_interval(values)
    return f"{i.estimate:.4f} [{i.ci_low:.4f}, {i.ci_high:.4f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--checkpoints", default="smollm2-135m,gemma3-270m")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    for name in args.checkpoints.split(","):
        folder = args.runs / name
        runs = sorted(folder.glob("s*/measure.json"))
        if not runs:
            print(f"{name}: no measure.json under {folder}")
            continue
        loaded = load_model(name, init="pretrained", attn_implementation="eager")
        w1: dict[str, list[float]] = {}
        first: dict[str, list[float]] = {"measured": []}
        last: dict[str, list[float]] = {"measured": []}
        rows: dict[str, list[np.ndarray]] = {"measured": []}
        sink: list[float] = []
        sink_weighted: list[float] = []
        for path in runs:
            record = json.loads(path.read_text())
            config = record["config"]
            ids = random_token_ids(
                loaded.vocab_size, config["samples"], config["length"], config["seed"]
            )
            layers = capture_attention(loaded, ids)
            masks = loaded.adapter.layer_masks(loaded.model.config, config["length"])
            measured = np.asarray(record["influence"])
            sink.append(float(np.mean([s.mean("head_mean")[1:, 0].mean() for s in layers])))
            sink_weighted.append(
                float(np.mean([s.mean("value_weighted")[1:, 0].mean() for s in layers]))
            )
            profiles = {"measured": measured, **candidates(layers, record, masks)}
            for cand, row in profiles.items():
                share = row / row.sum()
                first.setdefault(cand, []).append(float(share[0]))
                last.setdefault(cand, []).append(float(share[-1]))
                rows.setdefault(cand, []).append(share)
                if cand != "measured":
                    w1.setdefault(cand, []).append(wasserstein1(row, measured))
        print(f"{name}: {len(runs)} input sets at L = {config['length']}")
        print(
            f"  mean attention to token 1 (rows 2..L, heads, layers): {np.mean(sink):.3f}, "
            f"value-norm weighted: {np.mean(sink_weighted):.3f}"
        )
        print(
            f"  measured profile's share on token 1: {np.mean(first['measured']):.4f}, "
            f"on the target: {np.mean(last['measured']):.4f}"
        )
        result: dict[str, Any] = {
            "sink_attention": float(np.mean(sink)),
            "sink_attention_value_weighted": float(np.mean(sink_weighted)),
            "measured": {
                "token1_share": float(np.mean(first["measured"])),
                "target_share": float(np.mean(last["measured"])),
                "profile": np.mean(rows["measured"], axis=0).tolist(),
            },
            "candidates": {},
        }
        for cand, values in w1.items():
            share, target = float(np.mean(first[cand])), float(np.mean(last[cand]))
            print(f"  {cand}: W1 {interval(values)}, token 1 {share:.4f}, target {target:.4f}")
            i = seed_interval(values)
            result["candidates"][cand] = {
                "w1": values,
                "mean": i.estimate,
                "ci": [i.ci_low, i.ci_high],
                "token1_share": share,
                "target_share": target,
                "profile": np.mean(rows[cand], axis=0).tolist(),
            }
        compare = folder / "compare" / "compare.json"
        if compare.is_file():
            data = json.loads(compare.read_text())
            floor = data["noise_floor"]["metrics"]["wasserstein1"]
            print(
                f"  noise floor between input sets: W1 {floor['mean']:.4f} "
                f"[{floor['ci_low']:.4f}, {floor['ci_high']:.4f}]"
            )
            result["noise_floor"] = floor
            for cand, c in data["candidates"].items():
                m = c["out_of_sample"]["metrics"]["wasserstein1"]
                print(f"  {cand}: W1 {m['mean']:.4f} [{m['ci_low']:.4f}, {m['ci_high']:.4f}]")
        out[name] = result
        del loaded
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
