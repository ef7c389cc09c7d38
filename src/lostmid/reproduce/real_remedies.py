"""The inference remedies on real checkpoints: does a published
inference-time remedy flatten a real LLM's U?

One stage per checkpoint runs ``lostmid remedies`` on it (:func:`lostmid.remedies.run.
run_remedies`) with the baseline and the three inference remedies (:data:`REMEDIES`:
the query before and after the data, found-in-the-middle attention calibration, Ms-PoE)
on RULER's multi-key needle, prompted as the model expects (the lead-in the model writes
before the answer learnt from a pilot, ``--lead-in learn``: a base model's ':'), every
arm on the same items, differences paired by item.

The claims, one row per remedy and checkpoint, carry what the papers report for each
(:data:`CLAIMS`); the verdict is the remedies' own rule (:data:`lostmid.remedies.stats.
RULE`: the intervals of the gap and mean-accuracy differences against the margin m =
half the baseline's gap) read as a claim: ``works`` -> reproduced, ``does not work`` or
``worse`` -> not reproduced, ``inconclusive`` -> inconclusive.

Scales (:data:`REAL_REMEDY_SCALES`): ``quick`` SmolLM2 at 512 tokens, 4 items a depth,
two distractors (a few minutes once cached; too few items to decide: inconclusive is
expected); ``default`` both checkpoints at 1024 tokens, 20 items a depth, four
distractors (about an hour a checkpoint on 2 CPU cores: off unless asked). A folder of
finished runs (``--real-remedies DIR``: ``DIR/<model>/remedies.json``, or one run's
``DIR/remedies.json``) is read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from lostmid.compare.claims import Claim
from lostmid.errors import UserError
from lostmid.files import read_json_object
from lostmid.models.spec import ModelSpec
from lostmid.remedies.stats import RULE as REMEDY_RULE
from lostmid.reproduce.plan import PerModelSection, SectionRuns, run_replacing
from lostmid.reproduce.real_behaviour import CHECKPOINTS
from lostmid.stats.intervals import Interval
from lostmid.stats.verdicts import (
    DOES_NOT_WORK,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    WORKS,
    WORSE,
)

REMEDIES = ("query-aware", "calibrate", "ms-poe")
CLAIMS: dict[str, tuple[str, str]] = {
    "query-aware": (
        "The query before and after the data flattens a real LLM's U",
        "near-perfect key-value retrieval at every position (Liu et al. 2023)",
    ),
    "calibrate": (
        "Attention calibration recovers the middle of a real LLM",
        "up to +15 points on multi-document QA (found-in-the-middle, Hsieh et al. 2024)",
    ),
    "ms-poe": (
        "Multi-scale positions (Ms-PoE) flatten a real LLM's U",
        "+3.8 points on ZeroSCROLLS (Zhang et al. 2024)",
    ),
}
CLAIM_VERDICT = {
    WORKS: REPRODUCED,
    DOES_NOT_WORK: NOT_REPRODUCED,
    WORSE: NOT_REPRODUCED,
    INCONCLUSIVE: INCONCLUSIVE,
}
RULE = (
    "per remedy and checkpoint, lostmid remedies' verdict read as a claim (works -> "
    "reproduced; does not work or worse -> not reproduced; inconclusive -> inconclusive); "
    "its rule: " + REMEDY_RULE
)
FOLDER = "real-remedies"
RESULT = "remedies.json"


@dataclass(frozen=True)
class RealRemedyScale:
    """One scale of the section: which checkpoints, the task's size and difficulty."""

    name: str
    models: tuple[str, ...]
    length: int
    examples: int
    distractors: int
    task: str = "niah-multikey"
    lead_in: str = "learn"  # teacher forcing after what the model writes before the answer

    def remedies_config(self, model: ModelSpec | str, seed: int) -> Any:
        """The :class:`~lostmid.remedies.config.RemediesConfig` of ``model`` (prompted in
        its spec's format)."""
        from lostmid.remedies.config import RemediesConfig

        return RemediesConfig(
            remedies=("baseline", *REMEDIES),
            **ModelSpec.of(model).config_fields(),
            task=self.task,
            length=self.length,
            examples=self.examples,
            distractors=self.distractors,
            seeds=1,
            seed=seed,
            lead_in=self.lead_in,
        )


REAL_REMEDY_SCALES = {
    "quick": RealRemedyScale("quick", ("smollm2-135m",), 512, 4, 2),
    "default": RealRemedyScale("default", CHECKPOINTS, 1024, 20, 4),
}


def remedies_stage(scale: str, model: ModelSpec | str, seed: int, folder: Path) -> dict[str, Any]:
    """Run (or resume: remedies keeps each arm as a stage) ``remedies`` on ``model``."""
    from lostmid.remedies.run import run_remedies
    from lostmid.runs.backend import Backend

    config = REAL_REMEDY_SCALES[scale].remedies_config(model, seed)
    # the stage is a worker already (a daemon may not start processes): arms in turn
    run_replacing(partial(run_remedies, backend=Backend(jobs=1)), config, folder)
    return summary_record(read_json_object(folder / RESULT), folder)


def summary_record(result: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """What the section keeps of one ``remedies.json``: the run's design and, per arm,
    accuracy by position, the paired differences, the verdict and the compute added."""
    config = result["config"]
    arms = []
    for arm in result["remedies"]:
        arms.append(
            {
                "name": arm["name"],
                "accuracy": [p["estimate"] for p in arm["accuracy_by_position"]],
                "positions": [p["index"] for p in arm["accuracy_by_position"]],
                "difference": arm.get("difference_to_baseline"),
                "verdict": arm.get("verdict"),
                "margin": arm.get("margin"),
                "extra_forward_passes": arm.get("extra_forward_passes"),
                "seconds": arm.get("seconds"),
            }
        )
    return {
        "model": config["model"],
        "folder": str(folder),
        "task": config["task"],
        "length": config.get("length"),
        "distractors": config.get("distractors"),
        "examples": config.get("examples"),
        "arms": arms,
    }


def _ci(c: Mapping[str, Any] | None) -> str:
    if c is None or c.get("ci_low") is None:
        return "n/a"
    return Interval.from_record(c).text()  # no zero-width interval where none is defined


def _curve(arm: Mapping[str, Any]) -> str:
    return " / ".join(f"{a:.2f}" for a in arm["accuracy"])


@dataclass(frozen=True)
class RealRemedies(SectionRuns):
    """The section's result: one summary record per checkpoint (:func:`summary_record`)."""

    result_file = RESULT
    option = "--real-remedies"

    @classmethod
    def summary(cls, result: dict[str, Any], folder: Path) -> Mapping[str, Any]:
        if not result.get("config", {}).get("model"):
            raise UserError(
                f"--real-remedies {folder / RESULT}: a run of training-time remedies; give a "
                "run of inference remedies on a model (lostmid remedies --model ...)"
            )
        return summary_record(result, folder)

    @property
    def claims(self) -> tuple[Claim, ...]:
        rows = []
        for run in self.runs:
            for arm in run["arms"]:
                if arm["name"] not in CLAIMS:  # the baseline, or a remedy without a claim
                    continue
                claim, paper = CLAIMS[arm["name"]]
                d = arm["difference"] or {}
                ours = (
                    f"{run['model']}: {run['task']} at {run['length']} tokens, "
                    f"{run['examples']} items a depth; accuracy by depth {_curve(arm)}; vs the "
                    f"baseline (paired by item) mean {_ci(d.get('mean_accuracy'))}, gap "
                    f"{_ci(d.get('gap'))}; margin {arm['margin']:.3f}; remedies' verdict "
                    f"{arm['verdict']}"
                )
                verdict = CLAIM_VERDICT.get(str(arm["verdict"]), INCONCLUSIVE)
                rows.append(Claim(claim, paper, ours, verdict, RULE))
        return tuple(rows)

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for run in self.runs:
            for arm in run["arms"]:
                d = arm["difference"] or {}
                rows.append(
                    {
                        "model": run["model"],
                        "arm": arm["name"],
                        "accuracy by depth": _curve(arm),
                        "Δ mean [95%]": _ci(d.get("mean_accuracy")),
                        "Δ gap [95%]": _ci(d.get("gap")),
                        "verdict": arm["verdict"] or "(reference)",
                        "extra passes": arm["extra_forward_passes"],
                    }
                )
        return rows

    def paragraphs(self) -> tuple[str, ...]:
        lines = [
            f"Runs: {self.source}. Each checkpoint answers RULER's multi-key needle task with "
            "the needle at evenly spaced depths, under the baseline and each inference "
            "remedy, every arm on the same items; differences to the baseline are paired by "
            "item (a bootstrap over the items).",
        ]
        for run in self.runs:
            lines.append(f"{run['model']}: files {run['folder']}.")
        lines.append("Rule: " + RULE.rstrip(".") + ".")
        return tuple(lines)


class RealRemediesPlugin(PerModelSection):
    """The section (:class:`lostmid.reproduce.plan.Section`), key ``real_remedies``;
    ``--real-remedies`` chooses its scale (:data:`lostmid.reproduce.config.
    SECTION_OPTIONS`)."""

    key = "real_remedies"
    title = "Real checkpoints: do inference remedies flatten the U?"
    figure_prefix = "real-remedies-"
    scales = REAL_REMEDY_SCALES
    folder = FOLDER
    figure = "remedies.png"
    result_type = RealRemedies
    stage = staticmethod(remedies_stage)
    needs_layout = True  # the remedies hook attention


SECTION = RealRemediesPlugin()
