"""The real-link section of ``lostmid reproduce``: does a real LLM's influence profile
predict where it loses the middle?

The study (per example on the same needle prompts: the greedy answer's correctness
beside the needle's share of the Jacobian and of the answer's gradient, the random-init
twin as control; its run folder and readouts) is :mod:`lostmid.behaviour.link`; this
section runs it on each checkpoint at a scale, or reads finished runs back
(``--real-link DIR``: ``DIR/link.json`` or ``DIR/<model>/link.json``), and states the
claim.

The claim, one row per checkpoint, "its influence profile predicts where it loses the
middle", is the link rule (:func:`lostmid.stats.link.link_verdict`, stated before any
run, fed constructed yes / no / undecided data in its tests) on the Jacobian share, the
influence ``measure`` defines and the paper reasons with, asked two ways: across depths
(does the mean share by depth order the accuracy by depth? Spearman over the depth
means, stratified bootstrap) and within depths (at one depth, do right answers have a
larger share than wrong ones? stratified AUC). Across five depths any two U shapes
correlate, so that answer alone cannot fail a model with a U; the claim needs both:
reproduced when both are supported, not reproduced when either is not supported, else
inconclusive (:func:`claim_verdict`). The gradient share is reported beside it.

Scales (:data:`LINK_SCALES`): ``quick`` SmolLM2 at 512 tokens, one example a depth (a
few minutes; fewer than 5 a depth decide nothing: inconclusive by the rule);
``default`` both checkpoints at 1024 tokens, 20 examples a depth, four distractors (the
behavioural section's calibrated difficulty; about 15 s an example on one quiet CPU
thread: about 30 min a checkpoint, off unless asked).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lostmid.behaviour.link.design import LinkScale
from lostmid.behaviour.link.run import EXAMPLES, RESULT, link_run
from lostmid.behaviour.link.summary import SCORES
from lostmid.compare.claims import Claim
from lostmid.errors import UserError
from lostmid.files import read_bytes, read_json_object, write_bytes
from lostmid.models.spec import ModelSpec, model_slug
from lostmid.reproduce.config import ReproduceConfig
from lostmid.reproduce.plan import PerModelSection, SectionRuns, run_replacing
from lostmid.reproduce.real_behaviour import CHECKPOINTS
from lostmid.stats.intervals import Interval
from lostmid.stats.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_SUPPORTED,
    REPRODUCED,
    SUPPORTED,
)

CLAIM = "A real LLM's influence profile predicts where it loses the middle"
PAPER = (
    "a position's influence at the output decides whether what sits there is used (the "
    "paper's practical reading of its U-shaped influence)"
)
RULE = (
    "the link rule on the gold needle's share of measure's Jacobian norm, 95% stratified "
    "bootstrap, asked across depths (Spearman of the mean share by depth and the greedy "
    "accuracy by depth: supported above 0.5) and within depths (AUC of the share for "
    "right against wrong answers at one depth: supported above 0.55); reproduced when "
    "both are supported, not reproduced when either interval lies below its boundary "
    "(five depth means of two U shapes correlate whatever the link), else inconclusive "
    "(also with fewer than 5 examples at any depth)"
)
FOLDER = "real-link"
"""The section's folder under ``--out``: ``real-link/SCALE/MODEL`` a run's."""
CLAIM_VERDICT = {SUPPORTED: REPRODUCED, NOT_SUPPORTED: NOT_REPRODUCED}
LINK_ANSWERS = ("across_depths", "within_depths")
"""The link rule's two answers the claim needs (module doc)."""


LINK_SCALES = {
    "quick": LinkScale("quick", ("smollm2-135m",), 512, 1, 2, twin_per_depth=1),
    "default": LinkScale("default", CHECKPOINTS, 1024, 20, 4),
}


def link_stage(scale: str, model: ModelSpec | str, seed: int, folder: Path) -> dict[str, Any]:
    """The section's stage: :func:`lostmid.behaviour.link.run.link_run` at ``scale``; the
    summary with its folder."""

    def run(design: dict[str, Any], out: Path, overwrite: bool = False) -> None:
        link_run(design, out, overwrite=overwrite)

    # another scale's run in the section's folder is replaced; a direct link_run refuses
    run_replacing(run, LINK_SCALES[scale].design(model, seed), folder)
    summary = read_json_object(folder / RESULT)
    return {k: v for k, v in summary.items() if k != "metadata"} | {"folder": str(folder)}


def _ci(block: Mapping[str, Any] | None) -> str:
    if not block or block.get("value") is None:
        return "n/a"
    low, high = block.get("low"), block.get("high")
    ends = (-math.inf, math.inf) if low is None or high is None else (low, high)
    return Interval(block["value"], *ends).text()


def items_note(run: Mapping[str, Any]) -> str:
    """What this section's counts are made of, said beside the behaviour section's: the
    same model read on other prompts, so its correct counts differ from that section's.

    >>> run = {"model": "m", "design": {"task": "niah-multikey", "length": 512,
    ...        "per_depth": 1}, "by_depth": [{"n": 1}, {"n": 1}, {"n": 1}]}
    >>> items_note(run)[:69]
    'm: n = 3 prompts (3 depths x 1 a depth, niah-multikey at 512 tokens).'
    """
    d, depths = run["design"], run["by_depth"]
    n = sum(int(r["n"]) for r in depths)
    return (
        f"{run['model']}: n = {n} prompts ({len(depths)} depths x {d['per_depth']} a depth, "
        f"{d['task']} at {d['length']} tokens). These are this section's own prompts, "
        "built for the link and read with a gradient pass each: the same model as in the "
        "behaviour section, on other items (and there at its own length and calibrated "
        "difficulty), so the correct counts of the two sections differ; each answers its "
        "own question."
    )


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def claim_verdict(run: Mapping[str, Any]) -> str:
    """The claim's verdict from the link rule's two answers on the Jacobian share (module
    doc): reproduced when across and within depths are both supported, not reproduced
    when either is not supported, else inconclusive.

    >>> yes, no = {"verdict": "supported"}, {"verdict": "not supported"}
    >>> claim_verdict({"link": {"jacobian_share": {"across_depths": yes, "within_depths": yes}}})
    'reproduced'
    >>> claim_verdict({"link": {"jacobian_share": {"across_depths": yes, "within_depths": no}}})
    'not reproduced'
    >>> claim_verdict({"link": {}})
    'inconclusive'
    """
    block = run["link"].get("jacobian_share")
    if not block:
        return INCONCLUSIVE
    answers = [CLAIM_VERDICT.get(str(block[k]["verdict"]), INCONCLUSIVE) for k in LINK_ANSWERS]
    if NOT_REPRODUCED in answers:
        return NOT_REPRODUCED
    return REPRODUCED if set(answers) == {REPRODUCED} else INCONCLUSIVE


@dataclass(frozen=True)
class RealLink(SectionRuns):
    """The section's result: one summary per checkpoint
    (:func:`lostmid.behaviour.link.summary.summarise` and its folder)."""

    result_file = RESULT
    option = "--real-link"

    @classmethod
    def summary(cls, result: dict[str, Any], folder: Path) -> Mapping[str, Any]:
        if "by_depth" not in result or "design" not in result:
            raise UserError(f"--real-link {folder / RESULT}: not the result of a real-link run")
        return {k: v for k, v in result.items() if k != "metadata"} | {"folder": str(folder)}

    @property
    def claims(self) -> tuple[Claim, ...]:
        rows = []
        for run in self.runs:
            d, link = run["design"], run["link"]
            jac, grad = link.get("jacobian_share", {}), link.get("gradient_share", {})
            curve = " / ".join(
                f"{r['correct']}/{r['n']}:{_share(r['jacobian_share'])}" for r in run["by_depth"]
            )
            ours = (
                f"{run['model']}: {d['task']} at {d['length']} tokens, {d['per_depth']} "
                f"examples a depth; correct:Jacobian share by depth {curve}; across depths "
                f"Spearman {_ci(jac.get('across_depths'))}, within depths AUC "
                f"{_ci(jac.get('within_depths'))}; gradient share across "
                f"{_ci(grad.get('across_depths'))}"
            )
            rows.append(Claim(CLAIM, PAPER, ours, claim_verdict(run), RULE))
        return tuple(rows)

    def table(self) -> list[dict[str, Any]]:
        return [
            {
                "model": run["model"],
                "depth %": r["depth"],
                "correct": f"{r['correct']}/{r['n']}",
                "Jacobian share": _share(r["jacobian_share"]),
                "gradient share": _share(r["gradient_share"]),
                "twin's Jacobian share": _share(r["twin_jacobian_share"]),
            }
            for run in self.runs
            for r in run["by_depth"]
        ]

    def paragraphs(self) -> tuple[str, ...]:
        lines = [
            f"Runs: {self.source}. On each checkpoint's own prompts (RULER's multi-key "
            "needle, as the behavioural section asks it), each example's greedy answer is "
            "scored and the needle's reach on the answer measured: its share of measure's "
            "Jacobian norm of the last hidden state, and its share of the gradient of the "
            "answer's log-probability. The random-init twin on the same prompts shows what "
            "the topology alone gives the needle.",
        ]
        for run in self.runs:
            parts = []
            for score in SCORES:
                block = run["link"].get(score)
                if block:
                    parts.append(
                        f"{score.replace('_', ' ')}: across depths "
                        f"{block['across_depths']['verdict']}, within depths "
                        f"{block['within_depths']['verdict']}"
                    )
            lines.append(f"{run['model']}: " + ("; ".join(parts) or "too few examples") + ".")
            lines.append(items_note(run))
            lines.append(f"Files: {run['folder']}.")
        lines.append("Rule: " + RULE + ".")
        return tuple(lines)


class RealLinkPlugin(PerModelSection):
    """The section (:class:`lostmid.reproduce.plan.Section`), key ``real_link``;
    ``--real-link`` chooses its scale (:data:`lostmid.reproduce.config.SECTION_OPTIONS`)."""

    key = "real_link"
    title = "Real checkpoints: does the influence profile predict where the middle is lost?"
    figure_prefix = "real-link-"
    scales = LINK_SCALES
    folder = FOLDER
    figure = "link.png"
    result_type = RealLink
    stage = staticmethod(link_stage)
    needs_layout = True  # the needle's share of the Jacobian hooks the embeddings

    def collect(self, config: ReproduceConfig, results: Mapping[str, Any], out: Path) -> Any:
        """The runs (:class:`PerModelSection`'s); runs read from a finished folder
        elsewhere (``--real-link DIR``) are kept in the run folder too:
        ``real-link/read/<run>/`` gets each one's ``link.json`` and its per-example rows,
        ``examples.jsonl`` (:func:`keep_runs`)."""
        value = super().collect(config, results, out)
        if value is not None and config.scale.real_link not in self.scales:
            keep_runs(value, out / FOLDER / READ)
        return value


READ = "read"
"""Under ``real-link/``: the runs a ``--real-link DIR`` read, copied (:func:`keep_runs`)."""


def keep_runs(value: RealLink, folder: Path) -> list[Path]:
    """Copy each run's ``link.json`` and ``examples.jsonl`` (the per-example rows the
    claim is judged from) into ``folder/<run folder's name>/``, so that the run folder
    holds what ``--real-link folder`` reads back; a run already inside ``folder`` stays."""
    kept = []
    for run in value.runs:
        source = Path(run["folder"])
        target = folder / (source.name or model_slug(str(run["model"])))
        if source.resolve() == target.resolve():
            continue
        for name in (RESULT, EXAMPLES):
            if (source / name).is_file():
                kept.append(write_bytes(target / name, read_bytes(source / name)))
    return kept


SECTION = RealLinkPlugin()
