"""The HTML report of ``lostmid reproduce``: a layout over one :class:`ReproduceResult`
(the generic document is :class:`lostmid.report.html.Report`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lostmid.compare.claims import VERDICTS
from lostmid.report.html import Report
from lostmid.reproduce.analysis import ModelAnalysis, ReproduceResult
from lostmid.reproduce.figures import overlay_key

VERDICT_NOTE = (
    "Each verdict follows from our numbers by the rule printed under it; 'ours' is the "
    "mean over seeds +- the sample standard deviation. A claim the numbers do not "
    "support is marked 'not reproduced', whatever the paper says."
)


def _stage_seconds(meta: Mapping[str, Any]) -> float:
    return sum(v for k, v in meta["timings_s"].items() if k.startswith("stage:"))


def _model_section(report: Report, a: ModelAnalysis, result: ReproduceResult) -> None:
    rows = [
        {
            "candidate": name,
            "fitted parameters": c.parameter_count,
            "Spearman": c.metrics.spearman,
            "W1": c.metrics.wasserstein1,
            "log-corr": c.metrics.log_correlation,
            "log10 RMSE": c.metrics.log10_rmse,
            "log10 peak/valley": c.metrics.log10_peak_to_valley,
            "recency error": c.metrics.recency_error,
        }
        for name, c in a.candidates.items()
    ]
    ps, floor, mdl = a.per_seed_prediction, a.seed_noise_floor, a.model
    paragraphs = [
        f"{a.name}: {mdl['layers']} layers, hidden {mdl['hidden']}, family {mdl['family']}, "
        f"untrained (library initialisation), seeds {list(a.seeds)}. Influence = Frobenius "
        "norm of d h_t / d x_j (final hidden state after the final norm, t = L), averaged "
        "over seeds as sqrt of the mean squared norm.",
        "Predicted theory, per seed (each model's own measured residual strengths, no "
        "fitting): "
        + "; ".join(
            f"{k} Spearman {ps[k].spearman.text()}, W1 {ps[k].wasserstein1.text()}"
            for k in ("rollout", "jacobian")
        )
        + ".",
        "Noise floor between seeds (two independently initialised models): Spearman "
        f"{floor.spearman.text()}, W1 {floor.wasserstein1.text()}. A theory cannot be "
        "expected to agree with one model better than two models agree with each other.",
        "The table scores the seed-averaged profile. Baselines have their free "
        "parameters fitted to the measurement; the predicted theory has none.",
    ]
    overlay = result.figures.get(overlay_key(a.name))
    caption = "measured (black, +-1 s.e.), theories and baselines; log influence"
    report.add_section(
        f"Step 0: {a.name}",
        paragraphs=paragraphs,
        table=rows,
        figures=[] if overlay is None else [(overlay, caption)],
    )


def _figures(result: ReproduceResult, prefix: str) -> list[Any]:
    return [path for key, path in result.figures.items() if key.startswith(prefix)]


def build_report(result: ReproduceResult) -> Report:
    """Lay out the claims, the step-0 comparisons, positional encodings, depth growth,
    training dynamics and provenance of one reproduce run."""
    scale, meta = result.config.scale, result.metadata
    report = Report(
        "Lost in the middle at birth: does the exact theory predict real models?",
        subtitle=(
            f"lostmid reproduce, scale '{scale.name}' (L = {scale.length}, "
            f"{scale.seeds} seeds x {scale.samples} samples x {scale.probes} probes), "
            f"finished {meta['finished_utc']}; stages took {_stage_seconds(meta):.0f} s of "
            f"compute ({len(meta['stages_reused'])} reused from an earlier run), this "
            f"invocation {meta['timings_s']['total']:.0f} s"
        ),
    )
    counts = {v: sum(c.verdict == v for c in result.claims) for v in VERDICTS}
    report.add_section(
        "Claims",
        paragraphs=[
            ", ".join(f"{counts[v]} {v}" for v in VERDICTS) + ".",
            VERDICT_NOTE,
            f"Scale matters: the paper measured at L of about 2048, this run at L = "
            f"{scale.length}. Peak-to-valley ratios grow with L, and the Spearman and W1 "
            "of a profile depend on how many samples and probes average out its noise "
            "(see each model's noise floor below); lostmid reproduce --full runs at the "
            "paper's length.",
        ],
        verdicts=result.claims,
    )
    for analysis in result.models.values():
        _model_section(report, analysis, result)
    report.add_section(
        "Positional encodings switched off",
        paragraphs=[
            "The same weights measured twice: with the positional encoding, then "
            "with rotary made the identity (Qwen2) or the position embeddings "
            "removed (GPT-2)."
        ],
        table=[
            {
                "model": m,
                "switch": a.switch,
                "Spearman (with vs without)": a.positional_on_vs_off.spearman.text(),
                "W1 (with vs without)": a.positional_on_vs_off.wasserstein1.text(),
                "seed noise floor W1": a.seed_noise_floor.wasserstein1.text(),
            }
            for m, a in result.models.items()
        ],
        figures=_figures(result, "positional-"),
    )
    depth_rows = [
        {"model": m, "kernel": k, **point.record()}
        for m, a in result.models.items()
        for k in ("jacobian", "rollout")
        for point in (a.depth_growth or {}).get(k, ())
    ]
    if depth_rows:
        report.add_section(
            "Growth with depth",
            paragraphs=[
                "Per-layer profile l (influence on the residual stream after layer "
                "l, first seed) against the theory at H = l with the first l "
                "measured residual strengths."
            ],
            table=depth_rows,
            figures=_figures(result, "depth-"),
        )
    if result.training is not None:
        report.add_section(
            "Training dynamics",
            paragraphs=result.training.paragraphs,
            table=[row.record() for row in result.training.table],
            figures=[p for p in _figures(result, "train-") if p.exists()],
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
            {k: meta[k] for k in ("config", "versions", "timings_s", "platform")}, indent=1
        ),
    )
    return report
