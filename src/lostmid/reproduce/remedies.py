"""The remedies section of ``lostmid reproduce``: the paper's four remedy claims, judged
on a ``lostmid remedies`` run (run inside reproduce with ``--remedies quick|default``,
or read from a finished run's folder with ``--remedies DIR``).

Claims and the remedies behind them (``lostmid remedies`` names; ``curriculum-reverse``
is the control and backs no claim):

* curriculum: ``curriculum``;
* loss weighting: ``loss-weight``;
* oversampling: ``oversample``, ``oversample:rho``, ``oversample:adaptive``;
* architecture changes: ``prefix``, ``residual``, ``residual:gate``, ``channels``.

Rule (per claim). ``below resolution`` when the baseline has no resolved valley to
reduce: the 95% t intervals over seeds of its primacy (first - middle) and its recency
(last - middle) do not both lie above 0. Otherwise ``reproduced`` when at least one of
the claim's remedies *works* by ``lostmid remedies``' rule (the interval of its gap
difference to the baseline, paired by seed, below 0, and that of its mean-accuracy
difference not below 0; no correction for trying several variants); ``partly`` when
none works but one moves the right way (gap difference estimate < 0 with the accuracy
difference estimate >= 0); ``not reproduced`` otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lostmid.compare.claims import BELOW_RESOLUTION, NOT_REPRODUCED, PARTLY, REPRODUCED, Claim
from lostmid.errors import UserError
from lostmid.files import read_result
from lostmid.stats import Interval

FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "curriculum": (
        "A curriculum that emphasises middle positions reduces the valley",
        ("curriculum",),
    ),
    "loss-weight": (
        "Targeted loss weighting (1/rho_H) reduces the valley",
        ("loss-weight",),
    ),
    "oversample": (
        "Needle oversampling where the valley is reduces the valley",
        ("oversample", "oversample:rho", "oversample:adaptive"),
    ),
    "architecture": (
        "Architecture changes (prefix attention, residual routing, middle channels) "
        "reduce the valley",
        ("prefix", "residual", "residual:gate", "channels"),
    ),
}
"""Claim key -> (the claim, the remedy families behind it)."""

RULE = (
    "below resolution if the baseline's primacy and recency (95% t intervals over seeds) "
    "do not both lie above 0; reproduced if one of the claim's remedies works (gap "
    "difference to the baseline, paired by seed, below 0 with its 95% interval; "
    "mean-accuracy difference not below 0); partly if none works but one has gap "
    "difference < 0 and accuracy difference >= 0 as estimates; otherwise not reproduced"
)
PAPER = "proposed as remedies (no number given)"
RESULT = "remedies.json"


def _interval(record: Mapping[str, Any] | None) -> Interval | None:
    if record is None:
        return None
    low, high = record["ci_low"], record["ci_high"]
    return Interval(
        record["estimate"],
        float("-inf") if low is None else low,
        float("inf") if high is None else high,
        record["n"],
    )


@dataclass(frozen=True)
class RemedyRow:
    """One training-time remedy of a ``lostmid remedies`` run, as the claims read it."""

    name: str
    verdict: str | None
    gap: Interval | None
    primacy: Interval | None
    recency: Interval | None
    mean_accuracy: Interval | None
    gap_difference: Interval | None
    accuracy_difference: Interval | None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RemedyRow:
        """From one entry of ``remedies.json``'s ``"remedies"``."""
        diff = record.get("difference_to_baseline") or {}
        return cls(
            name=record["name"],
            verdict=record.get("verdict"),
            gap=_interval(record.get("gap")),
            primacy=_interval(record.get("primacy")),
            recency=_interval(record.get("recency")),
            mean_accuracy=_interval(record.get("mean_accuracy")),
            gap_difference=_interval(diff.get("gap")),
            accuracy_difference=_interval(diff.get("mean_accuracy")),
        )

    def text(self) -> str:
        if self.gap_difference is None or self.accuracy_difference is None:
            return f"{self.name}: no paired seeds"
        return (
            f"{self.name}: Δgap {_fmt(self.gap_difference)}, Δacc "
            f"{_fmt(self.accuracy_difference)} ({self.verdict})"
        )


def _fmt(i: Interval | None) -> str:
    if i is None:
        return "n/a"
    return f"{i.estimate:+.2f} [{i.ci_low:+.2f}, {i.ci_high:+.2f}]"


@dataclass(frozen=True)
class RemediesSection:
    """What the report shows of a ``lostmid remedies`` run: ``document`` is its
    ``remedies.json`` (read from ``source``); the baseline, each training-time remedy and
    the claims are derived from it."""

    document: Mapping[str, Any]
    source: str

    def __post_init__(self) -> None:
        if not any(r.name == "baseline" for r in self._rows()):
            raise UserError(f"{self.source} has no training-time baseline; run lostmid remedies")

    def _rows(self) -> list[RemedyRow]:
        return [
            RemedyRow.from_record(r)
            for r in self.document["remedies"]
            if r.get("kind", "training") == "training"
        ]

    @property
    def baseline(self) -> RemedyRow:
        return next(r for r in self._rows() if r.name == "baseline")

    @property
    def remedies(self) -> tuple[RemedyRow, ...]:
        return tuple(r for r in self._rows() if r.name != "baseline")

    @classmethod
    def read(cls, folder: Path) -> RemediesSection:
        """The ``remedies.json`` of a finished ``lostmid remedies --out folder``."""
        path = Path(folder) / RESULT
        if not path.is_file():
            raise UserError(
                f"--remedies {folder}: no {RESULT} there; give a lostmid remedies --out"
            )
        return cls(read_result(path, "remedies", option="--remedies"), str(path))

    def has_valley(self) -> bool:
        """Both ends of the baseline above its middle, with their t intervals."""
        p, r = self.baseline.primacy, self.baseline.recency
        return p is not None and r is not None and p.ci_low > 0 and r.ci_low > 0

    @property
    def claims(self) -> tuple[Claim, ...]:
        remedies, valley = self.remedies, self.has_valley()
        return tuple(
            remedy_claim(claim, self.baseline, [r for r in remedies if r.name in names], valley)
            for claim, names in FAMILIES.values()
            if any(r.name in names for r in remedies)
        )

    def table(self) -> list[dict[str, Any]]:
        """One row per remedy (baseline first): the metrics and differences over seeds."""
        return [
            {
                "remedy": r.name,
                "mean accuracy": _fmt(r.mean_accuracy),
                "gap": _fmt(r.gap),
                "primacy": _fmt(r.primacy),
                "recency": _fmt(r.recency),
                "Δgap": _fmt(r.gap_difference) if r.gap_difference else "(reference)",
                "Δaccuracy": _fmt(r.accuracy_difference)
                if r.accuracy_difference
                else "(reference)",
                "verdict": r.verdict or "(reference)",
            }
            for r in (self.baseline, *self.remedies)
        ]

    def paragraphs(self) -> tuple[str, ...]:
        scale = self.document.get("config", {}).get("scale", {})
        seeds = self.document.get("config", {}).get("seeds", [])
        return (
            f"From {self.source}: every training-time remedy of lostmid remedies against "
            f"the baseline at equal budget ({scale.get('steps', '?')} steps, "
            f"{scale.get('pairs', '?')} records, seeds {seeds}). Intervals: 95% t over "
            "seeds; differences paired by seed. The remedies' own table, figure and "
            "per-run files are beside that file.",
        )

    def record(self) -> dict[str, Any]:
        return {"source": self.source, "document": dict(self.document)}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RemediesSection:
        return cls(record["document"], record["source"])


def remedy_claim(
    claim: str, baseline: RemedyRow, remedies: Sequence[RemedyRow], valley: bool
) -> Claim:
    """One remedy claim by the rule of the module docstring."""
    base = (
        f"baseline gap {_fmt(baseline.gap)}, primacy {_fmt(baseline.primacy)}, recency "
        f"{_fmt(baseline.recency)}"
    )
    ours = "; ".join(r.text() for r in remedies) + f"; {base}"
    if not valley:
        verdict = BELOW_RESOLUTION
    elif any(r.verdict == "works" for r in remedies):
        verdict = REPRODUCED
    elif any(
        r.gap_difference is not None
        and r.accuracy_difference is not None
        and r.gap_difference.estimate < 0
        and r.accuracy_difference.estimate >= 0
        for r in remedies
    ):
        verdict = PARTLY
    else:
        verdict = NOT_REPRODUCED
    return Claim(claim, PAPER, ours, verdict, RULE)


def remedies_stage(scale: str, seed: int, folder: Path) -> RemediesSection:
    """Run ``lostmid remedies`` (every training-time remedy, ``scale`` = quick or default)
    into ``folder`` (it resumes per remedy and seed) and read its result."""
    from lostmid.remedies.config import RemediesConfig
    from lostmid.remedies.run import run_remedies

    run_remedies(RemediesConfig(quick=scale == "quick", seed=seed), out=folder)
    return RemediesSection.read(folder)


def add_remedies_section(report: Any, remedies: RemediesSection | None) -> None:
    """The report's remedies section, or how to get it when the run had none."""
    if remedies is None:
        report.add_section(
            "Remedies at equal budget",
            paragraphs=[
                "Not run here (about 15 min at the quick scale on 2 CPU cores): add "
                "--remedies quick (or default) to run lostmid remedies as a stage of this "
                "run, or --remedies DIR to judge the remedy claims on a finished "
                "lostmid remedies --out DIR."
            ],
        )
        return
    figure = Path(remedies.source).parent / "remedies.png"
    report.add_section(
        "Remedies at equal budget",
        paragraphs=remedies.paragraphs(),
        table=remedies.table(),
        figures=[figure] if figure.exists() else [],
        verdicts=remedies.claims,
    )
