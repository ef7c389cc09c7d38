"""The at-init core's part of report.html: how to read the claims, the findings, the
noise floors, each model's comparison and residual strengths, depth 1, positional
encodings switched off, growth with depth (:meth:`lostmid.reproduce.core.CoreSection.report`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lostmid.compare.candidates import Candidate, Scorecard
from lostmid.compare.claims import CLAIM_TOLERANCE, PAPER_WASSERSTEIN1
from lostmid.report.html import Report
from lostmid.reproduce.analysis import (
    FAITHFUL,
    FLOOR_TARGET,
    SCORING,
    SHOWN_BESIDE,
    WITH_MLP,
    ModelAnalysis,
)
from lostmid.reproduce.claims import (
    DEPTH1_CANDIDATE,
    DEPTH1_TOLERANCE,
    keyed_claims,
    model_claims,
    pm,
)
from lostmid.reproduce.config import Scale
from lostmid.reproduce.figures import overlay_key
from lostmid.reproduce.plan import figures_named
from lostmid.stats.verdicts import BELOW_RESOLUTION

VERDICT_NOTE = (
    "Each verdict follows from our numbers by the rule under its row (open 'all numbers "
    "and the rule'); each seed is scored on its own (zero-parameter candidates) or held "
    "out (fitted ones). The noise floor is how well two independently initialised models "
    "agree with each other; a claim that even the floor cannot reach is 'below "
    "resolution' (the measurement cannot test it at this budget), one whose interval "
    "spans a boundary of its rule 'inconclusive', one our numbers contradict 'not "
    "reproduced', whatever the paper says."
)


def _score(c: Candidate, metric: str, digits: int = 4) -> str:
    """Held-out (fitted) or per-seed (zero-parameter) score; in sample with one seed."""
    value = c.score(metric)
    text = pm(value, digits)
    return text if c.out_of_sample is not None else f"{text} (in sample)"


def _number(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None or value != value else f"{value:.{digits}f}"


def candidate_rows(card: Scorecard) -> list[dict[str, Any]]:
    """One row per candidate: its kind, what it takes from the measurement, and its
    scores per seed / held out (mean [95% interval]) and in sample on the pooled seeds."""
    return [
        {
            "candidate": name,
            "kind": c.kind,
            "fitted parameters": c.parameter_count,
            "W1 per seed / held out": _score(c, "wasserstein1"),
            "Spearman per seed / held out": _score(c, "spearman", 3),
            "W1 binned": _score(c, "binned_wasserstein1"),
            "Spearman binned": _score(c, "binned_spearman", 3),
            "W1 on the pooled seeds": _number(c.metrics.wasserstein1),
            "log10 peak/valley": _number(c.metrics.log10_peak_to_valley, 2),
        }
        for name, c in card.candidates.items()
    ]


def floor_row(name: str, a: ModelAnalysis, scale: Scale) -> dict[str, Any]:
    """The noise floor of one model, its budget and the depth-1 floor."""
    card = a.scorecard
    floor = card.noise_floor
    row: dict[str, Any] = {
        "model": name,
        "seeds": len(a.seeds),
        "per seed": f"{scale.samples} samples x {scale.probes} probes at L = {scale.length}; "
        f"gains on {a.strengths.samples} x {a.strengths.directions} directions",
    }
    for metric, label, digits in (
        ("wasserstein1", "W1", 4),
        ("spearman", "Spearman", 3),
        ("binned_wasserstein1", "W1 binned", 4),
        ("binned_spearman", "Spearman binned", 3),
    ):
        row[label] = "n/a (one seed)" if floor is None else pm(floor.metrics[metric], digits)
    d1 = None if a.depth1 is None else a.depth1.noise_floor
    row["layer-1 W1"] = "n/a" if d1 is None else pm(d1.wasserstein1)
    sampling, b = a.sampling_floor, a.budget
    row["W1 between the two parts of one seed"] = (
        "n/a (one input per seed)" if sampling is None else pm(sampling["wasserstein1"])
    )
    if b is None:
        row["W1 floor: sampling / model-to-model"] = "n/a (needs 2 seeds and 2 inputs)"
        row[f"inputs per seed for W1 floor {FLOOR_TARGET:g}"] = "n/a"
    else:
        row["W1 floor: sampling / model-to-model"] = (
            f"{b.sampling:.4f} / {b.model:.4f} (parts of {b.parts[0]} and {b.parts[1]} inputs)"
        )
        row[f"inputs per seed for W1 floor {FLOOR_TARGET:g}"] = (
            f"about {b.samples_needed}"
            if b.samples_needed is not None
            else f"none: models differ by {b.model:.4f} > {FLOOR_TARGET:g}"
        )
    row["log10 peak/valley sd"] = f"{a.log10_peak_to_valley.spread:.3f}"
    return row


def findings(a: ModelAnalysis) -> list[str]:
    """What the numbers of one model say, claim by claim, in words."""
    card, cands, claims = a.scorecard, a.candidates, keyed_claims(a)
    floor = card.noise_floor
    floor_w1 = "n/a (one seed)" if floor is None else pm(floor.wasserstein1)

    def w1(name: str, scorecard: Scorecard = card) -> str:
        return pm(scorecard.candidates[name].score("wasserstein1"))

    reach = PAPER_WASSERSTEIN1 + CLAIM_TOLERANCE["wasserstein1"]
    zero = [c for c in cands.values() if c.kind == "predicted"]
    within = [c.name for c in zero if c.score("wasserstein1").mean <= reach]
    outside = [c.name for c in zero if c.name not in within]
    bases = [c for c in cands.values() if c.kind == "baseline"]
    best = min(bases, key=lambda c: c.score("wasserstein1").mean)
    beside = ", ".join(f"{k} {w1(k)}" for k in SHOWN_BESIDE)
    out = [
        f"{a.name}, the paper's zero-parameter W1 {PAPER_WASSERSTEIN1:g} (seed-to-seed "
        f"noise floor {floor_w1}): {FAITHFUL} (the paper's model with the measured "
        f"per-position gains, nothing fitted) reaches W1 {w1(FAITHFUL)} per seed: "
        f"{claims['w1'].verdict}; {WITH_MLP} (the MLP's per-position gain and coherence "
        f"added) {w1(WITH_MLP)}: {claims['w1_mlp'].verdict}; both are lostmid's "
        "position-resolved extension, not the paper's theory. The paper's uniform theory "
        f"with the Jacobian a_l: {beside}; judged on its own rows: W1 "
        f"{claims['uniform_w1'].verdict}, Spearman {claims['uniform_spearman'].verdict}; "
        "with the peer's forward ratio as a_l "
        f"(predicted:jacobian-forward) {w1('predicted:jacobian-forward')}. "
        + (
            f"The paper's number holds (mean W1 <= {PAPER_WASSERSTEIN1:g} + "
            f"{CLAIM_TOLERANCE['wasserstein1']:g}) for {', '.join(within)}"
            + (f"; not for {', '.join(outside)}." if outside else ".")
            if within
            else f"No zero-parameter candidate is within {PAPER_WASSERSTEIN1:g} + "
            f"{CLAIM_TOLERANCE['wasserstein1']:g}: the paper's number is not supported here."
        ),
        f"{a.name}, the paper's Spearman 0.99: {claims['spearman'].verdict}"
        + (
            " (two seeds of the same model agree only at Spearman "
            f"{pm(floor.spearman, 3)}: the flat middle is ranked by noise; on "
            f"{card.bins} log bins {FAITHFUL} scores "
            f"{pm(cands[FAITHFUL].score('binned_spearman'), 3)} and {WITH_MLP} "
            f"{pm(cands[WITH_MLP].score('binned_spearman'), 3)})."
            if floor is not None
            else "."
        ),
        f"{a.name}, against the baselines: the best fitted baseline, {best.name}, scores "
        f"W1 {pm(best.score('wasserstein1'))} "
        + ("out of sample" if best.out_of_sample is not None else "in sample")
        + f"; {WITH_MLP} {w1(WITH_MLP)}, {FAITHFUL} {w1(FAITHFUL)}: "
        + f"{claims['baseline'].verdict}.",
        f"{a.name}, positional encoding ({a.switch}): Spearman with vs without "
        f"{pm(a.positional_on_vs_off['spearman'], 3)}, W1 "
        f"{pm(a.positional_on_vs_off['wasserstein1'])}: {claims['encoding'].verdict}; on "
        f"log bins {pm(a.positional_on_vs_off['binned_spearman'])}: "
        f"{claims['encoding_binned'].verdict}; W1 against the W1 between seeds "
        f"{floor_w1}: {claims['encoding_w1'].verdict}. "
        f"Peak-to-valley 10^{a.log10_peak_to_valley.mean:.2f}: "
        f"{claims['peak_to_valley'].verdict}.",
    ]
    if a.depth1 is not None:
        d1_floor = a.depth1.noise_floor
        out.append(
            f"{a.name}, depth 1 (the theory is exact there): {DEPTH1_CANDIDATE} with "
            f"a_1 from the branch gain reaches W1 {w1(DEPTH1_CANDIDATE, a.depth1)} on the "
            f"layer-1 profile (target {DEPTH1_TOLERANCE:g}, layer-1 noise floor "
            f"{'n/a (one seed)' if d1_floor is None else pm(d1_floor.wasserstein1)}): "
            f"{claims['depth1'].verdict}; with the forward ratio "
            f"{w1('predicted:jacobian-forward', a.depth1)}."
        )
    return out


def _model_section(report: Report, a: ModelAnalysis, figures: Mapping[str, Path]) -> None:
    mdl, card = a.model, a.scorecard
    paragraphs = [
        f"{a.name}: {mdl['layers']} layers, hidden {mdl['hidden']}, family {mdl['family']}, "
        f"untrained (library initialisation), seeds {list(a.seeds)}. Influence = Frobenius "
        "norm of d h_t / d x_j (final hidden state after the final norm, t = L); the seeds "
        "are pooled as the mean of their profiles normalised to sum 1.",
        f"Scoring ({SCORING['fit_metric']} fits, spike {SCORING['spike']}, {card.bins} log "
        "bins): zero-parameter candidates ('predicted') are scored on each seed with that "
        "seed's own measured gains; fitted candidates (theory fits and baselines alike) are "
        "fitted on the other seeds and scored on the held-out one; 'W1 on the pooled seeds' "
        "is in sample. 'fitted parameters' counts the numbers a candidate takes from the "
        "profile (a global scale is free for all).",
        *card.notes,
    ]
    overlay = figures.get(overlay_key(a.name))
    caption = (
        f"measured (black, +-1 s.e.), {FAITHFUL} and {WITH_MLP} first, the other theories and the "
        "baselines; log influence"
    )
    report.add_section(
        f"Step 0: {a.name}",
        paragraphs=paragraphs,
        table=candidate_rows(card),
        figures=[] if overlay is None else [(overlay, caption)],
    )
    s = a.strengths
    report.add_section(
        f"Residual strength by layer: {a.name}",
        paragraphs=[
            "Mean over seeds. The branch gain s_l is the attention branch's Jacobian gain "
            "per unit of attention weight (lostmid.influence.gains), a_l = s_l/(1+s_l) the "
            "theory's residual strength; the forward ratio mean ||attn||/(||x||+||attn||) "
            "is the peer project's, which shrinks like 1/sqrt(position). MLP gain and "
            "coherence (1: the same Jacobian at every position up to scale, 0: unrelated) "
            f"feed predicted:positional-mlp. Gains on {s.samples} input(s) x "
            f"{s.directions} direction(s) per seed."
        ],
        table=s.rows(),
    )


def depth1_rows(models: Mapping[str, ModelAnalysis]) -> list[dict[str, Any]]:
    """The zero-parameter candidates at depth 1, per model."""
    return [
        {
            "model": m,
            "candidate": name,
            "W1 per seed": _score(c, "wasserstein1"),
            "Spearman per seed": _score(c, "spearman", 3),
            "W1 binned": _score(c, "binned_wasserstein1"),
            "layer-1 noise floor W1": "n/a (one seed)"
            if a.depth1.noise_floor is None
            else pm(a.depth1.noise_floor.wasserstein1),
        }
        for m, a in models.items()
        if a.depth1 is not None
        for name, c in a.depth1.candidates.items()
        if c.kind == "predicted"
    ]


def core_report(
    report: Report,
    scale: Scale,
    models: Mapping[str, ModelAnalysis],
    figures: Mapping[str, Path],
) -> None:
    """The at-init core's sections (module docstring) for the analyses of ``models``;
    the note on "below resolution" where one of their claims is."""
    below = any(c.verdict == BELOW_RESOLUTION for a in models.values() for c in model_claims(a))
    report.add_section(
        "How to read the claims",
        paragraphs=[
            VERDICT_NOTE,
            f"Scale matters: the paper measured at L of about 2048, this run at L = "
            f"{scale.length}. Peak-to-valley ratios grow with L, and the noise floor "
            "shrinks with the samples per seed; lostmid reproduce --full runs at the "
            "paper's length with a larger budget.",
        ],
    )
    report.add_section(
        "What the numbers say",
        paragraphs=[p for a in models.values() for p in findings(a)]
        + (
            [
                f"'{BELOW_RESOLUTION}' is not a failure of the theory: it says this run's "
                "seeds disagree with each other by more than the paper's tolerance, so "
                "the claim needs more samples per seed (--samples, or --full)."
            ]
            if below
            else []
        ),
    )
    report.add_section(
        "Noise floor",
        paragraphs=[
            "Agreement between independently initialised models of one architecture "
            "(every pair of seeds, mean [95% interval] over pairs): the resolution the verdicts "
            "use. Part of it is sampling noise, which shrinks like 1/sqrt(inputs per "
            "seed): each seed's inputs are measured in two parts, and W1 between the "
            "parts, rescaled to two measurements of the full budget, estimates it. The "
            "rest is the real "
            "difference between two random models, which no budget removes: "
            "model-to-model = sqrt(floor^2 - sampling^2), and the inputs per seed for a "
            f"floor of {FLOOR_TARGET:g} are n sampling^2 / ({FLOOR_TARGET:g}^2 - "
            "model-to-model^2) (lostmid.reproduce.analysis.FloorBudget; an estimate: W1 "
            "adds only roughly in quadrature)."
        ],
        table=[floor_row(m, a, scale) for m, a in models.items()],
    )
    for analysis in models.values():
        _model_section(report, analysis, figures)
    rows = depth1_rows(models)
    if rows:
        report.add_section(
            "Depth 1: where the theory is exact",
            paragraphs=[
                "The profile of the residual stream after layer 1 (every seed) against the "
                "zero-parameter candidates at H = 1: the uniform theory with a_1 from the "
                "branch gain (predicted:jacobian, the claim), or from the forward ratio "
                "(predicted:jacobian-forward), and the per-position gains "
                "(predicted:positional). The spike over the mean of the other positions "
                "is t (1 - a_1) / a_1 = t / s_1 there."
            ],
            table=rows,
        )
    report.add_section(
        "Positional encodings switched off",
        paragraphs=[
            "The same weights and inputs measured twice: with the positional encoding, "
            "then with rotary made the identity (Qwen2) or the position embeddings "
            "removed (GPT-2). Mean [95% interval] over seeds; the paired floor is the same "
            "model with its inputs swapped (one half of the inputs against the other)."
        ],
        table=[
            {
                "model": m,
                "switch": a.switch,
                "Spearman (with vs without)": pm(a.positional_on_vs_off["spearman"], 3),
                "W1 (with vs without)": pm(a.positional_on_vs_off["wasserstein1"]),
                "Spearman binned": pm(a.positional_on_vs_off["binned_spearman"], 3),
                "paired floor Spearman (inputs swapped)": "n/a (one input per seed)"
                if a.sampling_floor is None
                else pm(a.sampling_floor["spearman"], 3),
                "paired floor Spearman binned": "n/a (one input per seed)"
                if a.sampling_floor is None
                else pm(a.sampling_floor["binned_spearman"], 3),
                "seed noise floor Spearman": "n/a (one seed)"
                if a.scorecard.noise_floor is None
                else pm(a.scorecard.noise_floor.spearman, 3),
                "seed noise floor W1": "n/a (one seed)"
                if a.scorecard.noise_floor is None
                else pm(a.scorecard.noise_floor.wasserstein1),
            }
            for m, a in models.items()
        ],
        figures=figures_named(figures, "positional-"),
    )
    depth_rows = [
        {
            "model": m,
            "kernel": k,
            **{
                key: value if isinstance(value, int) else _number(value, 4)
                for key, value in point.record().items()
            },
        }
        for m, a in models.items()
        for k, points in ({} if a.depth_growth is None else a.depth_growth.points).items()
        for point in points
    ]
    if depth_rows:
        report.add_section(
            "Growth with depth",
            paragraphs=[
                "Per-layer profile l (influence on the residual stream after layer "
                "l, first seed) against the theory at H = l from the first l layers' "
                "measured gains: positional (per-position gains, jacobian kernel) and the "
                "uniform kernels with a_l = s_l/(1+s_l)."
            ],
            table=depth_rows,
            figures=figures_named(figures, "depth-"),
        )
