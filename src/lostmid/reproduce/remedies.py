"""The remedies section of ``lostmid reproduce``: the paper's four remedy claims, judged
on ``lostmid remedies`` runs (run inside reproduce with ``--remedies quick|default``,
or read from finished runs with ``--remedies DIR``).

``DIR`` is either one run's folder (its ``remedies.json``) or a folder holding one run
per law, ``DIR/tilt/`` and ``DIR/replace/`` (``lostmid remedies --law tilt --out
DIR/tilt`` and ``--law replace --out DIR/replace``; either may be missing). Each run
gives one row per claim, so where both laws were run each claim has two rows: under
``tilt`` a remedy's gold law reweights the training data's (which still asks about its
ends most), under ``replace`` it stands alone (rebalancing the data), and the law
decides much of what a remedy does.

Claims and the remedies behind them (``lostmid remedies`` names):

* curriculum: ``curriculum``;
* loss weighting: ``loss-weight``;
* oversampling: ``oversample``, ``oversample:rho``, ``oversample:adaptive``,
  ``oversample:middle-cover``, ``oversample:deficit``;
* architecture changes: ``prefix``, ``residual``, ``residual:gate``, ``channels``.

The control, ``curriculum-reverse`` (the outer records first, then uniform), backs no
claim; its differences to the baseline are shown beside every row, so a reader can tell
an effect of emphasising the middle from one of changing the training law at all.

Rule (per claim and law, :data:`RULE`). ``below resolution`` when the baseline has no
resolved valley to reduce: the 95% t intervals over seeds of its primacy (first -
middle) and its recency (last - middle) do not both lie above 0. Otherwise each of the
claim's remedies is judged by ``lostmid remedies``' rule
(:data:`lostmid.remedies.stats.RULE`, recomputed here from the stored intervals), and
the claim is ``reproduced`` when one of them works (no correction for trying several
variants), ``inconclusive`` when none works and one is inconclusive, and ``not
reproduced`` when each does not work or is worse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from lostmid.compare.claims import Claim
from lostmid.errors import UserError
from lostmid.files import read_result
from lostmid.remedies.config import LAWS
from lostmid.remedies.stats import RULE as REMEDY_RULE
from lostmid.remedies.stats import gap_margin, verdict
from lostmid.report.html import Report
from lostmid.reproduce.plan import PlannedStage
from lostmid.stats import Interval
from lostmid.stats.shape import is_u
from lostmid.stats.verdicts import (
    BELOW_RESOLUTION,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    WORKS,
)

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
        (
            "oversample",
            "oversample:rho",
            "oversample:adaptive",
            "oversample:middle-cover",
            "oversample:deficit",
        ),
    ),
    "architecture": (
        "Architecture changes (prefix attention, residual routing, middle channels) "
        "reduce the valley",
        ("prefix", "residual", "residual:gate", "channels"),
    ),
}
"""Claim key -> (the claim, the remedy families behind it)."""

CONTROL = "curriculum-reverse"
LAW_TEXT = {
    "tilt": "remedy laws reweighting the data's",
    "replace": "remedy laws replacing the data's",
}
RULE = (
    "per claim and --law: below resolution if the baseline's primacy and recency (95% t "
    "intervals over seeds) do not both lie above 0; otherwise each of the claim's "
    f"remedies is judged by lostmid remedies' rule ({REMEDY_RULE}), and the claim is "
    "reproduced if one of them works (no correction for trying several variants), "
    "inconclusive if none works and one is inconclusive, not reproduced if each does not "
    f"work or is worse; the control {CONTROL} backs no claim and is shown beside"
)
PAPER = "proposed as remedies (no number given)"
RESULT = "remedies.json"


def _interval(record: Mapping[str, Any] | None) -> Interval | None:
    return None if record is None else Interval.from_record(record)


def _fmt(i: Interval | None) -> str:
    return "n/a" if i is None else i.text()


@dataclass(frozen=True)
class RemedyRow:
    """One training-time remedy of a ``lostmid remedies`` run, as the claims read it
    (``verdict``: by :func:`lostmid.remedies.stats.verdict` with the run's margin)."""

    name: str
    verdict: str | None
    gap: Interval | None
    primacy: Interval | None
    recency: Interval | None
    mean_accuracy: Interval | None
    gap_difference: Interval | None
    accuracy_difference: Interval | None

    @classmethod
    def from_record(cls, record: Mapping[str, Any], margin: float | None = None) -> RemedyRow:
        """From one entry of ``remedies.json``'s ``"remedies"``; with ``margin`` the
        verdict is recomputed from the stored intervals (one rule for old and new runs)."""
        diff = record.get("difference_to_baseline") or {}
        gap_difference = _interval(diff.get("gap"))
        accuracy_difference = _interval(diff.get("mean_accuracy"))
        judged = record.get("verdict")
        if margin is not None and gap_difference is not None and accuracy_difference is not None:
            judged = verdict(gap_difference, accuracy_difference, margin)
        return cls(
            name=record["name"],
            verdict=judged,
            gap=_interval(record.get("gap")),
            primacy=_interval(record.get("primacy")),
            recency=_interval(record.get("recency")),
            mean_accuracy=_interval(record.get("mean_accuracy")),
            gap_difference=gap_difference,
            accuracy_difference=accuracy_difference,
        )

    def text(self) -> str:
        if self.gap_difference is None or self.accuracy_difference is None:
            return f"{self.name}: no paired seeds"
        return (
            f"{self.name}: Δgap {_fmt(self.gap_difference)}, Δacc "
            f"{_fmt(self.accuracy_difference)} ({self.verdict})"
        )


@dataclass(frozen=True)
class RemediesRun:
    """One ``lostmid remedies`` run: ``document`` is its ``remedies.json`` (read from
    ``source``); its law, baseline, margin, remedies and claims are derived from it."""

    document: Mapping[str, Any]
    source: str

    def __post_init__(self) -> None:
        if not any(r["name"] == "baseline" for r in self._records()):
            raise UserError(f"{self.source} has no training-time baseline; run lostmid remedies")

    def _records(self) -> list[Mapping[str, Any]]:
        return [r for r in self.document["remedies"] if r.get("kind", "training") == "training"]

    @property
    def law(self) -> str:
        """The run's ``--law`` (``tilt`` for runs made before the option)."""
        return str(self.document.get("config", {}).get("law", "tilt"))

    @property
    def baseline(self) -> RemedyRow:
        return next(RemedyRow.from_record(r) for r in self._records() if r["name"] == "baseline")

    @property
    def margin(self) -> float:
        """Half the baseline's mean gap (:func:`lostmid.remedies.stats.gap_margin`)."""
        gap = self.baseline.gap
        return 0.0 if gap is None else gap_margin(gap)

    @property
    def remedies(self) -> tuple[RemedyRow, ...]:
        return tuple(
            RemedyRow.from_record(r, self.margin)
            for r in self._records()
            if r["name"] != "baseline"
        )

    def has_valley(self) -> bool:
        """Both ends of the baseline above its middle, with their t intervals."""
        p, r = self.baseline.primacy, self.baseline.recency
        return p is not None and r is not None and is_u(p, r)

    @property
    def control(self) -> RemedyRow | None:
        return next((r for r in self.remedies if r.name == CONTROL), None)

    @property
    def claims(self) -> tuple[Claim, ...]:
        remedies, valley = self.remedies, self.has_valley()
        return tuple(
            remedy_claim(
                claim,
                self.law,
                self.baseline,
                [r for r in remedies if r.name in names],
                valley,
                self.control,
                self.margin,
            )
            for claim, names in FAMILIES.values()
            if any(r.name in names for r in remedies)
        )

    def table(self) -> list[dict[str, Any]]:
        """One row per remedy (baseline first): the metrics and differences over seeds."""
        return [
            {
                "law": self.law,
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

    def paragraph(self) -> str:
        config = self.document.get("config", {})
        scale = config.get("scale", {})
        return (
            f"--law {self.law} ({LAW_TEXT.get(self.law, self.law)}), from {self.source}: "
            "every training-time remedy of lostmid remedies against the baseline at equal "
            f"budget ({scale.get('steps', '?')} steps, {scale.get('pairs', '?')} records, "
            f"seeds {config.get('seeds', [])}); margin m = {self.margin:.3g} (half the "
            "baseline's gap)."
        )

    @classmethod
    def read(cls, folder: Path) -> RemediesRun:
        path = Path(folder) / RESULT
        return cls(read_result(path, "remedies", option="--remedies"), str(path))


def run_folders(folder: Path) -> list[tuple[str | None, Path]]:
    """The runs a ``--remedies DIR`` names: ``DIR`` itself when it holds
    ``remedies.json`` (law None: the run's own), else ``DIR/tilt`` and ``DIR/replace``
    that hold one (law: the folder's name). Empty when there is none."""
    folder = Path(folder)
    if (folder / RESULT).is_file():
        return [(None, folder)]
    return [(law, folder / law) for law in LAWS if (folder / law / RESULT).is_file()]


@dataclass(frozen=True)
class RemediesSection:
    """What the report shows of ``lostmid remedies`` runs: one :class:`RemediesRun` per
    law (``tilt`` first), each giving one row per claim."""

    runs: tuple[RemediesRun, ...]

    def __post_init__(self) -> None:
        if not self.runs:
            raise UserError("the remedies section needs at least one lostmid remedies run")
        laws = [r.law for r in self.runs]
        if len(set(laws)) != len(laws):
            raise UserError(f"two remedies runs with the same --law ({', '.join(laws)})")

    @property
    def source(self) -> str:
        return "; ".join(r.source for r in self.runs)

    @classmethod
    def read(cls, folder: Path) -> RemediesSection:
        """The runs of ``--remedies DIR`` (:func:`run_folders`)."""
        found = run_folders(folder)
        if not found:
            raise UserError(
                f"--remedies {folder}: no {RESULT} there, nor in tilt/ or replace/ under it; "
                "give a lostmid remedies --out (or a folder of one per --law)"
            )
        runs = []
        for law, path in found:
            run = RemediesRun.read(path)
            if law is not None and run.law != law:
                raise UserError(
                    f"{run.source} was run with --law {run.law}, not {law}; move it to "
                    f"{Path(folder) / run.law}"
                )
            runs.append(run)
        return cls(tuple(runs))

    @property
    def claims(self) -> tuple[Claim, ...]:
        """Every run's claims, each claim's rows together (in the order of the runs)."""
        rows = [c for run in self.runs for c in run.claims]
        return tuple(
            c for family, _ in FAMILIES.values() for c in rows if c.claim.startswith(family)
        )

    def table(self) -> list[dict[str, Any]]:
        return [row for run in self.runs for row in run.table()]

    def paragraphs(self) -> tuple[str, ...]:
        return (
            *(run.paragraph() for run in self.runs),
            "Intervals: 95% t over seeds; differences paired by seed. Each run's own "
            "table, figure and per-run files are beside its remedies.json.",
        )

    def record(self) -> dict[str, Any]:
        return {"runs": [{"source": r.source, "document": dict(r.document)} for r in self.runs]}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RemediesSection:
        if "runs" not in record:  # a stage saved before runs per law: one run
            return cls((RemediesRun(record["document"], record["source"]),))
        return cls(tuple(RemediesRun(r["document"], r["source"]) for r in record["runs"]))


def remedy_claim(
    claim: str,
    law: str,
    baseline: RemedyRow,
    remedies: Sequence[RemedyRow],
    valley: bool,
    control: RemedyRow | None = None,
    margin: float | None = None,
) -> Claim:
    """One remedy claim under one law by the rule of the module docstring."""
    base = (
        f"baseline gap {_fmt(baseline.gap)}, primacy {_fmt(baseline.primacy)}, recency "
        f"{_fmt(baseline.recency)}"
    )
    beside = f"control {control.text()}" if control is not None else f"control {CONTROL}: not run"
    verdicts = {r.verdict for r in remedies}
    if not valley:
        chosen = BELOW_RESOLUTION
    elif WORKS in verdicts:
        chosen = REPRODUCED
    elif INCONCLUSIVE in verdicts:
        chosen = INCONCLUSIVE
    else:
        chosen = NOT_REPRODUCED
    # the remedy that decides comes first (the report's compact table shows that clause):
    # one that works, else one inconclusive, else the one whose gap fell most
    rank = {WORKS: 0, INCONCLUSIVE: 1}
    ordered = sorted(
        remedies,
        key=lambda r: (
            rank.get(str(r.verdict), 2),
            r.gap_difference.estimate if r.gap_difference is not None else float("inf"),
        ),
    )
    ours = "; ".join([*(r.text() for r in ordered), beside, base])
    if margin is not None:
        ours += f"; margin m = {margin:.3g}"
    return Claim(f"{claim} (--law {law}: {LAW_TEXT.get(law, law)})", PAPER, ours, chosen, RULE)


def remedies_stage(scale: str, seed: int, folder: Path) -> RemediesSection:
    """Run ``lostmid remedies`` (every training-time remedy, ``scale`` = quick or default,
    ``--law tilt``) into ``folder`` (it resumes per remedy and seed) and read its result."""
    from lostmid.remedies.config import RemediesConfig
    from lostmid.remedies.run import run_remedies

    run_remedies(RemediesConfig(quick=scale == "quick", seed=seed), out=folder)
    return RemediesSection.read(folder)


class RemediesPlugin:
    """The remedies section (:class:`lostmid.reproduce.plan.Section`): ``lostmid
    remedies`` run as a stage (``--remedies quick|default``) or read from a finished
    run's folder (``--remedies DIR``), judged by the remedy claims."""

    key = "remedies"

    def check(self, config: Any) -> None:
        """Nothing to check beyond the option's own."""

    def stages(self, config: Any, device: str, out: Path) -> list[PlannedStage]:
        if config.remedies not in ("quick", "default"):
            return []
        return [
            PlannedStage(
                "remedies",
                {"scale": config.remedies, "seed": config.seed},
                partial(remedies_stage, str(config.remedies), config.seed, out / "remedies"),
                RemediesSection.from_record,
            )
        ]

    def collect(self, config: Any, results: Mapping[str, Any], out: Path) -> RemediesSection | None:
        found: RemediesSection | None = results.get("remedies")
        if found is None and config.remedies is not None:  # a finished run's folder
            found = RemediesSection.read(Path(config.remedies))
        return found

    def figures(self, value: RemediesSection, folder: Path) -> dict[str, Path]:
        return {}  # each run's remedies.png is beside its remedies.json (see report)

    def record(self, value: RemediesSection) -> dict[str, Any]:
        return {"source": value.source, "table": value.table()}

    def report(
        self, report: Report, value: RemediesSection | None, figures: Mapping[str, Path]
    ) -> None:
        add_remedies_section(report, value)


SECTION = RemediesPlugin()


def add_remedies_section(report: Report, remedies: RemediesSection | None) -> None:
    """The report's remedies section, or how to get it when the run had none."""
    if remedies is None:
        report.add_section(
            "Remedies at equal budget",
            paragraphs=[
                "Not run here (about 15 min at the quick scale on 2 CPU cores): add "
                "--remedies quick (or default) to run lostmid remedies as a stage of this "
                "run, or --remedies DIR to judge the remedy claims on a finished "
                "lostmid remedies --out DIR (or on DIR/tilt and DIR/replace, one run per "
                "--law)."
            ],
        )
        return
    figures = [Path(run.source).parent / "remedies.png" for run in remedies.runs]
    report.add_section(
        "Remedies at equal budget",
        paragraphs=remedies.paragraphs(),
        table=remedies.table(),
        figures=[f for f in figures if f.exists()],
        verdicts=remedies.claims,
    )
