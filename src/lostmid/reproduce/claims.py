"""The paper's step-0 claims for one architecture, judged by the rules of
:mod:`lostmid.compare.claims` against the noise floor of the measurement; and the
claims table printed at the end of a run.

Per model, each row's title says what it judges: the paper's uniform theory, lostmid's
position-resolved extension of it, or the measured profile alone. Each states its noise
floor (W1 and Spearman between independently initialised seeds,
:func:`lostmid.compare.scoring.noise_floor`):

1. the paper's uniform theory (:data:`~lostmid.reproduce.analysis.UNIFORM`: one a_l per
   layer from the measured branch gains, nothing fitted) matches the step-0 profile at
   W1 0.02, and
2. at Spearman 0.99 (the rollout kernel's numbers beside it);
3. lostmid's position-resolved extension matches it at W1 0.02, judged on
   :data:`~lostmid.reproduce.analysis.FAITHFUL` (each seed against the prediction from
   its own measured per-position gains; the uniform-theory predictions beside it);
4. the same for :data:`~lostmid.reproduce.analysis.WITH_MLP` (the MLP's measured
   per-position gain and coherence added);
5. Spearman 0.99, judged on ``FAITHFUL`` (the others beside it);
6. ``WITH_MLP`` is no worse than the best naive baseline scored out of sample (our
   check; ``FAITHFUL``'s number beside it);
7. the positional encoding changes the measured profile little (Spearman 0.99, claimed
   for Qwen2 without RoPE), judged against the floor of the same paired design: the
   same model with its inputs swapped (one half of the inputs against the other), not
   the floor between independently initialised models; on the raw profile and on log
   bins (where the flat middle is no longer ranked by noise), two rows;
8. the same on W1 (:func:`~lostmid.compare.claims.verdict_within_floor`): the W1 with vs
   without the encoding against the W1 between independently initialised models, the
   scale of "the same profile" for this architecture (Spearman on log bins ranks a
   changed profile as the same when both are monotone with a last-token spike);
   reproduced if its interval lies wholly at or below the seed floor's upper end, not
   reproduced if wholly above it;
9. peak-to-valley about 10^2 at initialisation;
10. at depth 1, where the theory is exact, the layer-1 profile matches
    ``predicted:jacobian`` with a_1 from the branch gain (W1 0 within our target 0.005).

Every number is a mean with its 95% interval over seeds
(:data:`lostmid.compare.claims.UNCERTAINTY`). A claim the floor cannot reach is ``below
resolution`` (:func:`~lostmid.compare.claims.verdict_at_most` and ``verdict_at_least``
with ``floor=``), not ``not reproduced``; one whose interval spans a boundary of its rule
is ``inconclusive``. The claims read a :class:`~lostmid.reproduce.analysis.ModelAnalysis`
or, for a finished run judged again without its stages, a
:class:`~lostmid.reproduce.analysis.SavedModel` (:func:`saved_claims`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from lostmid.compare.candidates import Candidate, Scorecard, w1_difference
from lostmid.compare.claims import (
    CLAIM_TOLERANCE,
    PAPER_SPEARMAN,
    PAPER_WASSERSTEIN1,
    Claim,
    Verdict,
    floor_relation,
    format_interval,
    verdict_at_least,
    verdict_at_most,
    verdict_no_worse,
    verdict_order_of_magnitude,
    verdict_within_floor,
)
from lostmid.reproduce.analysis import (
    FAITHFUL,
    SHOWN_BESIDE,
    UNIFORM,
    UNIFORM_ROLLOUT,
    WITH_MLP,
    ModelAnalysis,
    SavedModel,
)
from lostmid.stats.intervals import MeanSpread
from lostmid.stats.verdicts import (
    BELOW_RESOLUTION,
    INCONCLUSIVE,
    NOT_APPLICABLE,
    NOT_REPRODUCED,
    NOT_ROBUST,
    PARTLY,
    REPRODUCED,
)

PAPER_PEAK_TO_VALLEY = 100.0
DEPTH1_EXACT, DEPTH1_TOLERANCE = 0.0, 0.005
"""Depth 1: the theory is exact (W1 0); the tolerance is the target W1 <= 0.005."""
DEPTH1_CANDIDATE = UNIFORM

VERDICT_COLOURS = {
    REPRODUCED: "green",
    PARTLY: "yellow",
    NOT_REPRODUCED: "red",
    INCONCLUSIVE: "magenta",
    BELOW_RESOLUTION: "cyan",
    NOT_ROBUST: "bright_red",
    NOT_APPLICABLE: "dim",
}
"""A colour for every claim verdict (a test holds it to :data:`CLAIM_VERDICTS`)."""


def pm(value: MeanSpread, digits: int = 3) -> str:
    """A number over seeds: its mean and 95% interval at ``digits`` significant digits
    (:func:`~lostmid.compare.claims.format_interval`)."""
    return format_interval(value, digits)


def floor_text(card: Scorecard, metric: str, ours: MeanSpread | None = None) -> str:
    """The noise floor of ``metric`` as a clause of a claim's 'ours' text, and where
    ``ours`` sits against it by their intervals (above, at or below the floor)."""
    if card.noise_floor is None:
        return "noise floor n/a (one seed)"
    floor = card.noise_floor.metrics[metric]
    where = "" if ours is None else f"; ours is {floor_relation(ours, floor)}"
    return f"noise floor (between seeds) {pm(floor)}{where}"


def judge(
    card: Scorecard | None,
    ours: MeanSpread,
    metric: str,
    paper: float,
    tolerance: float,
    floor: MeanSpread | None = None,
) -> Verdict:
    """``ours`` against ``paper`` by compare's rule for ``metric`` (W1: at most, else at
    least) on 95% intervals, with a noise floor of that metric as the resolution: the
    scorecard's (between seeds) unless ``floor`` gives one of the same design."""
    if floor is None and card is not None and card.noise_floor is not None:
        floor = card.noise_floor.metrics[metric]
    rule = verdict_at_least if "spearman" in metric else verdict_at_most
    return rule(
        ours.interval(),
        paper,
        tolerance,
        floor=None if floor is None or floor.n == 0 else floor.interval(),
    )


def _per_seed(c: Candidate, metric: str, digits: int = 3) -> str:
    """A zero-parameter candidate's score on each seed (in sample with one seed)."""
    return f"{c.name} {pm(c.score(metric), digits)}"


CLAIM_KEYS = (
    "uniform_w1",
    "uniform_spearman",
    "w1",
    "w1_mlp",
    "spearman",
    "baseline",
    "encoding",
    "encoding_binned",
    "encoding_w1",
    "peak_to_valley",
    "depth1",
)
"""The keys of :func:`keyed_claims`, in the order of the module docstring."""

Judged = ModelAnalysis | SavedModel
"""What the step-0 claims read of one model: its analysis, or its numbers read back from
a finished run's reproduce.json."""

THEORIES = {
    UNIFORM: "the paper's uniform theory",
    FAITHFUL: "lostmid's position-resolved extension, not the paper's theory",
    WITH_MLP: "lostmid's position-resolved extension, not the paper's theory",
}
"""Which theory each judged candidate is, as the row titles say it."""
MEASUREMENT = "a measurement, no theory"
"""What the rows on the measured profile alone say they judge."""


def theory_claims(a: Judged) -> list[Claim]:
    """Claims 1-6: the paper's uniform theory and lostmid's extension against the
    profile, and the extension against the baselines."""
    card = a.scorecard
    claims = []
    judged = (
        (
            UNIFORM,
            "wasserstein1",
            PAPER_WASSERSTEIN1,
            (UNIFORM_ROLLOUT,),
            "one a_l = s_l/(1+s_l) per layer from the measured branch gains",
        ),
        (
            UNIFORM,
            "spearman",
            PAPER_SPEARMAN,
            (UNIFORM_ROLLOUT,),
            "one a_l = s_l/(1+s_l) per layer from the measured branch gains",
        ),
        (FAITHFUL, "wasserstein1", PAPER_WASSERSTEIN1, SHOWN_BESIDE, "measured per-position gains"),
        (WITH_MLP, "wasserstein1", PAPER_WASSERSTEIN1, (), "per-position gains and the MLP's"),
        (FAITHFUL, "spearman", PAPER_SPEARMAN, (WITH_MLP, *SHOWN_BESIDE), "per-position gains"),
    )
    for name, metric, paper, beside, what in judged:
        digits = 3
        ours = a.candidates[name].score(metric)
        binned = a.candidates[name].score(f"binned_{metric}")
        text = "Spearman" if metric == "spearman" else "W1"
        claims.append(
            Claim.judged(
                f"{a.name} at step 0 matches {THEORIES[name]} ({text}, {name}: "
                f"{what}, nothing fitted)",
                f"{paper:g}",
                "; ".join(
                    [
                        f"{pm(ours, digits)} per seed",
                        *(_per_seed(a.candidates[k], metric, digits) for k in beside),
                        f"on {card.bins} log bins {pm(binned, digits)}",
                        floor_text(card, metric, ours),
                    ]
                ),
                judge(card, ours, metric, paper, CLAIM_TOLERANCE[metric]),
            )
        )
    bases = [c for c in a.candidates.values() if c.kind == "baseline"]
    best = min(bases, key=lambda c: _mean_or_inf(c.score("wasserstein1")))
    mine = a.candidates[WITH_MLP]
    ours, theirs = mine.score("wasserstein1"), best.score("wasserstein1")
    where = "out of sample" if best.out_of_sample is not None else "in sample (one seed)"
    difference = w1_difference(mine, best)
    claims.append(
        Claim.judged(
            f"{a.name}: lostmid's position-resolved extension ({WITH_MLP}) is no worse than "
            f"the best naive baseline on W1, the baseline fitted and scored {where} (our "
            "check, not the paper's)",
            f"{best.name} {pm(theirs)}",
            f"{pm(ours)}; difference per held-out seed {pm(difference)}; "
            f"{_per_seed(a.candidates[FAITHFUL], 'wasserstein1')}; "
            + floor_text(card, "wasserstein1", ours),
            verdict_no_worse(difference.interval(), f"W1 {WITH_MLP} - {best.name}"),
        )
    )
    return claims


def _mean_or_inf(value: MeanSpread) -> float:
    return value.mean if value.n else float("inf")


def model_claims(a: Judged) -> list[Claim]:
    """The step-0 claims for one architecture, in the order of the module docstring."""
    return list(keyed_claims(a).values())


def saved_claims(models: Mapping[str, Mapping[str, Any]]) -> list[Claim]:
    """The step-0 claims of a finished run judged again from its reproduce.json's
    ``models`` (each model's record, :class:`~lostmid.reproduce.analysis.SavedModel`),
    without its stages: the same rows a run makes, by today's rules."""
    return [c for name, m in models.items() for c in model_claims(SavedModel.from_record(name, m))]


def encoding_claims(a: Judged) -> list[Claim]:
    """Claims 7-8: the measured profile with vs without the positional encoding, on ranks
    against the paired floor and on W1 against the floor between seeds."""
    card = a.scorecard
    pe = a.positional_on_vs_off
    sampling = a.sampling_floor
    design = f"with vs without, same weights, inputs and probes; {a.switch}"
    claims = []
    for metric, text in (
        ("spearman", "Spearman"),
        ("binned_spearman", f"Spearman on {card.bins} log bins"),
    ):
        paired = None if sampling is None else sampling[metric]
        floor_clause = (
            "no paired floor (one input per seed)"
            if paired is None
            else f"paired floor (the same model, the inputs swapped: one half against the "
            f"other) {pm(paired)}; ours is {floor_relation(pe[metric], paired)}"
        )
        claims.append(
            Claim.judged(
                f"{a.name}: the measured profile does not depend on the positional encoding "
                f"({MEASUREMENT}; {text}, {design})",
                f"{PAPER_SPEARMAN:g} (claimed for Qwen2 without RoPE)",
                f"{pm(pe[metric])}; W1 {pm(pe['wasserstein1'])}; {floor_clause}",
                judge(
                    None,
                    pe[metric],
                    "spearman",
                    PAPER_SPEARMAN,
                    CLAIM_TOLERANCE["spearman"],
                    floor=paired,
                ),
            )
        )
    change = pe["wasserstein1"]
    seeds = None if card.noise_floor is None else card.noise_floor.metrics["wasserstein1"]
    usable = seeds is not None and seeds.n > 0
    times = (
        f"; {change.mean / seeds.mean:.2g}x the floor's mean"
        if usable and seeds is not None and seeds.mean > 0
        else ""
    )
    paired = None if sampling is None else sampling["wasserstein1"]
    claims.append(
        Claim.judged(
            f"{a.name}: the measured profile does not depend on the positional encoding "
            f"({MEASUREMENT}; W1 with vs without against the W1 between seeds; same "
            f"weights, inputs and probes; {a.switch})",
            "independent of the positional encoding (no number given)",
            f"W1 with vs without {pm(change)}; noise floor (between seeds) "
            + ("n/a (one seed)" if seeds is None else pm(seeds))
            + times
            + ("" if paired is None else f"; paired floor (the inputs swapped) {pm(paired)}"),
            verdict_within_floor(
                change.interval(),
                seeds.interval() if usable and seeds is not None else None,
                "W1 with vs without",
            ),
        )
    )
    return claims


def keyed_claims(a: Judged) -> dict[str, Claim]:
    """The step-0 claims for one architecture by :data:`CLAIM_KEYS` (``depth1`` only
    when the layer-1 profiles were measured)."""
    claims = theory_claims(a) + encoding_claims(a)
    ptv = a.log10_peak_to_valley
    claims.append(
        Claim.judged(
            f"{a.name}: the measured peak-to-valley ratio at initialisation ({MEASUREMENT})",
            "about 10^2",
            f"10^{pm(ptv)} decades; noise floor: the seed-to-seed sd {ptv.spread:.2g} decades",
            verdict_order_of_magnitude(ptv.interval(), PAPER_PEAK_TO_VALLEY),
        )
    )
    if a.depth1 is not None:
        d1 = a.depth1
        ours = d1.candidates[DEPTH1_CANDIDATE].score("wasserstein1")
        others = [d1.candidates[k] for k in ("predicted:positional", "predicted:jacobian-forward")]
        claims.append(
            Claim.judged(
                f"{a.name}: at depth 1, where the paper's theory is exact, the layer-1 profile "
                f"matches {THEORIES[UNIFORM]} ({DEPTH1_CANDIDATE}, a_1 = s_1/(1+s_1) from "
                "the branch gain; W1)",
                f"exact (our target W1 <= {DEPTH1_TOLERANCE:g})",
                f"{pm(ours)} per seed; "
                + "; ".join(_per_seed(c, "wasserstein1") for c in others)
                + f"; {floor_text(d1, 'wasserstein1', ours)}",
                judge(d1, ours, "wasserstein1", DEPTH1_EXACT, DEPTH1_TOLERANCE),
            )
        )
    return dict(zip(CLAIM_KEYS, claims, strict=False))


def claims_table(claims: Sequence[Claim]) -> Table:
    """The claims as a rich table, verdicts coloured."""
    table = Table(title="claims", show_lines=False)
    for col in ("claim", "paper", "ours", "verdict"):
        table.add_column(col, overflow="fold")
    for c in claims:
        colour = VERDICT_COLOURS[c.verdict]
        table.add_row(c.claim, c.paper, c.ours, Text(c.verdict, style=colour))
    return table
