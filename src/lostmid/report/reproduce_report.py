"""The HTML report of ``lostmid reproduce``: a thin layout over reproduce.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lostmid.report.html import Report

_VERDICT_NOTE = (
    "Each verdict follows from our numbers by the rule printed under it; 'ours' is the "
    "mean over seeds +- the sample standard deviation. A claim the numbers do not "
    "support is marked 'not reproduced', whatever the paper says."
)


def _fmt(x: Any, digits: int = 4) -> Any:
    if isinstance(x, float):
        return float(f"{x:.{digits}g}")
    return x


def build_report(record: dict[str, Any], figures: dict[str, Path]) -> Report:
    """Lay out the claims, the step-0 comparisons, positional encodings, depth growth,
    training dynamics and provenance of one reproduce run."""
    scale = record["scale"]
    meta = record["metadata"]
    report = Report(
        "Lost in the middle at birth: does the exact theory predict real models?",
        subtitle=(
            f"lostmid reproduce, scale '{scale['name']}' (L = {scale['length']}, "
            f"{scale['seeds']} seeds x {scale['samples']} samples x {scale['probes']} probes), "
            f"finished {meta['finished_utc']}; stages took {_stage_seconds(meta):.0f} s of "
            f"compute ({len(meta['stages_reused'])} reused from an earlier run), this "
            f"invocation {meta['timings_s']['total']:.0f} s"
        ),
    )
    claims = record["claims"]
    counts = {
        v: sum(c["verdict"] == v for c in claims)
        for v in ("reproduced", "partly", "not reproduced")
    }
    report.add_section(
        "Claims",
        paragraphs=[
            f"{counts['reproduced']} reproduced, {counts['partly']} partly, "
            f"{counts['not reproduced']} not reproduced.",
            _VERDICT_NOTE,
            f"Scale matters: the paper measured at L of about 2048, this run at L = "
            f"{scale['length']}. Peak-to-valley ratios grow with L, and the Spearman and W1 "
            "of a profile depend on how many samples and probes average out its noise "
            "(see each model's noise floor below); lostmid reproduce --full runs at the "
            "paper's length.",
        ],
        verdicts=claims,
    )
    for model, a in record["models"].items():
        rows = []
        for name, c in a["candidates"].items():
            m = c["metrics"]
            rows.append(
                {
                    "candidate": name,
                    "fitted parameters": c["parameter_count"],
                    "Spearman": _fmt(m["spearman"]),
                    "W1": _fmt(m["wasserstein1"]),
                    "log-corr": _fmt(m["log_correlation"]),
                    "log10 RMSE": _fmt(m["log10_rmse"]),
                    "log10 peak/valley": _fmt(m["log10_peak_to_valley"]),
                    "recency error": _fmt(m["recency_error"]),
                }
            )
        ps = a["per_seed_prediction"]
        floor = a["seed_noise_floor"]
        mdl = a["model"]
        paragraphs = [
            f"{model}: {mdl['layers']} layers, hidden {mdl['hidden']}, family {mdl['family']}, "
            f"untrained (library initialisation), seeds {a['seeds']}. Influence = Frobenius "
            "norm of d h_t / d x_j (final hidden state after the final norm, t = L), averaged "
            "over seeds as sqrt of the mean squared norm.",
            "Predicted theory, per seed (each model's own measured residual strengths, no "
            f"fitting): rollout Spearman {ps['rollout']['spearman']['mean']:.4f} +- "
            f"{ps['rollout']['spearman']['sd']:.4f}, W1 {ps['rollout']['wasserstein1']['mean']:.4f}"
            f" +- {ps['rollout']['wasserstein1']['sd']:.4f}; jacobian Spearman "
            f"{ps['jacobian']['spearman']['mean']:.4f} +- {ps['jacobian']['spearman']['sd']:.4f}, "
            f"W1 {ps['jacobian']['wasserstein1']['mean']:.4f} +- "
            f"{ps['jacobian']['wasserstein1']['sd']:.4f}.",
            "Noise floor between seeds (two independently initialised models): Spearman "
            f"{_s(floor['spearman'])}, W1 {_s(floor['wasserstein1'])}. A theory cannot be "
            "expected to agree with one model better than two models agree with each other.",
            "The table scores the seed-averaged profile. Baselines have their free "
            "parameters fitted to the measurement; the predicted theory has none.",
        ]
        report.add_section(
            f"Step 0: {model}",
            paragraphs=paragraphs,
            table=rows,
            figures=[
                (
                    figures[f"overlay-{_slug(model)}"],
                    "measured (black, +-1 s.e.), theories and baselines; log influence",
                )
            ]
            if f"overlay-{_slug(model)}" in figures
            else [],
        )
    pe_rows = [
        {
            "model": m,
            "switch": a.get("switch"),
            "Spearman (with vs without)": _s(a["positional_on_vs_off"]["spearman"]),
            "W1 (with vs without)": _s(a["positional_on_vs_off"]["wasserstein1"]),
            "seed noise floor W1": _s(a["seed_noise_floor"]["wasserstein1"]),
        }
        for m, a in record["models"].items()
    ]
    report.add_section(
        "Positional encodings switched off",
        paragraphs=[
            "The same weights measured twice: with the positional encoding, then "
            "with rotary made the identity (Qwen2) or the position embeddings "
            "removed (GPT-2)."
        ],
        table=pe_rows,
        figures=[figures[k] for k in figures if k.startswith("positional-")],
    )
    depth_rows = []
    for m, a in record["models"].items():
        for k in ("jacobian", "rollout"):
            for r in (a.get("depth_growth") or {}).get(k, []):
                depth_rows.append({"model": m, "kernel": k, **{kk: _fmt(v) for kk, v in r.items()}})
    if depth_rows:
        report.add_section(
            "Growth with depth",
            paragraphs=[
                "Per-layer profile l (influence on the residual stream after layer "
                "l, first seed) against the theory at H = l with the first l "
                "measured residual strengths."
            ],
            table=depth_rows,
            figures=[figures[k] for k in figures if k.startswith("depth-")],
        )
    training = record.get("training")
    if training is not None:
        report.add_section(
            "Training dynamics",
            paragraphs=training.get("paragraphs", []),
            table=training.get("table"),
            figures=[f for k, f in figures.items() if k.startswith("train-") and Path(f).exists()],
        )
    report.add_section(
        "Provenance",
        paragraphs=[
            f"Stages computed in this run: {', '.join(meta['stages_computed']) or 'none'}; "
            f"reused from an earlier run: {', '.join(meta['stages_reused']) or 'none'}.",
            "Every number here is in reproduce.json and claims.json next to this file; each "
            "stage's inputs and outputs are in stages/.",
        ],
        code=json.dumps(
            {
                "config": meta["config"],
                "versions": meta["versions"],
                "timings_s": meta["timings_s"],
                "platform": meta["platform"],
            },
            indent=1,
        ),
    )
    return report


def _stage_seconds(meta: dict[str, Any]) -> float:
    return sum(v for k, v in meta["timings_s"].items() if k.startswith("stage:"))


def _s(stat: dict[str, Any]) -> str:
    if not stat or stat.get("n", 0) == 0:
        return "n/a"
    return f"{stat['mean']:.4f} +- {stat['sd']:.4f} (n={stat['n']})"


def _slug(model: str) -> str:
    from lostmid.reproduce import _slug as slug

    return slug(model)
