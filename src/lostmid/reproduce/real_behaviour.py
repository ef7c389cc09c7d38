"""The behavioural section for real checkpoints: does a real LLM lose the
middle of what it read?

One stage per checkpoint runs ``lostmid retrieve`` on it (:func:`lostmid.behaviour.retrieve.run.
run_retrieve`): RULER's multi-key needle (a needle among distractor needles, placed at
evenly spaced depths of a haystack), prompted as the model expects (``--chat-template
auto``: an instruct model's template with an answer prefix inside the assistant turn, a
base model's raw text) and, at the default and full scales, its difficulty first placed
by a pilot (``--calibrate``: the distractors that put greedy accuracy at the middle depth
in 0.3-0.8, pilot examples kept out of the measured ones). A task at its ceiling or its
floor shows no curve, so a verdict needs the middle inside that band.

The claim, one row per checkpoint, "a real LLM loses the middle", is judged by the shape
of greedy accuracy by depth (:func:`lostmid.stats.shape.classify` on retrieve's primacy
and recency: accuracy at the first and at the last depth minus that at the middle, 95%
Newcombe intervals, margin 0.05): :func:`shape_verdict`.

Scales (:data:`REAL_SCALES`): ``quick`` SmolLM2 at 512 tokens, 3 depths x 6 examples, two
distractors, no pilot (a minute once cached; too few examples to decide: inconclusive
is the expected verdict); ``default`` both checkpoints at 1024 tokens, 5 depths x 20
examples, calibrated, each checkpoint run twice: with RULER's scattered needles and as
the needle-order control (``fixed``, below); ``full`` the same with 90 examples per
depth (primacy and recency intervals about 0.28 wide). A folder of a finished run
(``--real-behaviour DIR``: one ``retrieve.json`` per run under ``DIR/<run>/``) is read
back; a run made with ``retrieve --needle-order fixed`` (the distractors around the
gold needle at every depth, as in ``studies/needle-order``) is the needle-order control
and gets its own claim (:data:`FIXED_ORDER_CLAIM`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lostmid.compare.claims import Claim
from lostmid.files import read_json_object
from lostmid.models.spec import ModelSpec
from lostmid.reproduce.plan import PerModelSection, SectionRuns, run_replacing
from lostmid.stats.intervals import Interval
from lostmid.stats.shape import u_ruled_out
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED

CLAIM = "A real LLM loses the middle"
FIXED_ORDER_CLAIM = CLAIM + ", the needles' order held fixed"
"""The claim of a run whose distractor needles sit around the gold one at every depth
(``retrieve --needle-order fixed``): the depth moves, the gold needle's place among the
needles does not, so a first-or-last-needle guess cannot draw the U."""
PAPER = "U-shaped accuracy by position (Liu et al. 2023), the behaviour the paper explains"
RULE = (
    "greedy accuracy by depth: primacy (first - middle) and recency (last - middle), 95% "
    "Newcombe intervals (paired by item where the items are the same at every depth), "
    "margin 0.05; reproduced when both lie above 0 (a U), not reproduced when the shape "
    "is resolved and not a U (flat, primacy, recency, inverted U) or either interval "
    "lies below 0 or inside the margin (that end is not above the middle), inconclusive "
    "otherwise or when the middle depth is outside the calibration band (a task at its "
    "floor or ceiling shows no curve)"
)
FOLDER = "real-behaviour"
RESULT = "retrieve.json"


@dataclass(frozen=True)
class RealScale:
    """One scale of the section: which checkpoints, the task and its size."""

    name: str
    models: tuple[str, ...]
    length: int
    depths: int
    examples: int
    calibrate: bool
    distractors: int | None = None
    task: str = "niah-multikey"
    pilot_examples: int = 12
    band: tuple[float, float] = (0.3, 0.8)
    extra: Mapping[str, Any] = field(default_factory=dict)
    orders: tuple[str, ...] = ("scattered",)
    """The needle orders run on each checkpoint, one stage each: ``scattered`` (RULER's,
    the section's claim) and ``fixed`` (the needle-order control, :data:`FIXED_ORDER_CLAIM`)."""

    def retrieve_config(self, model: ModelSpec | str, seed: int, order: str = "scattered") -> Any:
        """The :class:`~lostmid.behaviour.retrieve.config.RetrieveConfig` of ``model``
        (prompted in its spec's format) with the needles in ``order``."""
        from lostmid.behaviour.retrieve.config import RetrieveConfig

        return RetrieveConfig(
            needle_order=order,
            task=self.task,
            length=self.length,
            positions=self.depths,
            examples=self.examples,
            distractors=None if self.calibrate else self.distractors,
            calibrate=self.calibrate,
            band=self.band,
            pilot_examples=self.pilot_examples,
            passes="generate",
            seed=seed,
            **ModelSpec.of(model).config_fields(),
            **self.extra,
        )


CHECKPOINTS = ("smollm2-135m", "gemma3-270m")
BOTH_ORDERS = ("scattered", "fixed")
REAL_SCALES = {
    "quick": RealScale("quick", ("smollm2-135m",), 512, 3, 6, False, distractors=2),
    "default": RealScale("default", CHECKPOINTS, 1024, 5, 20, True, orders=BOTH_ORDERS),
    "full": RealScale("full", CHECKPOINTS, 1024, 5, 90, True, orders=BOTH_ORDERS),
}
ORDER_SUFFIX = {"scattered": "", "fixed": "-fixed-order"}
"""A run's folder and stage name: the model's slug and this (the scattered run keeps the
plain slug, so a folder written before the control existed reads the same)."""


def shape_verdict(
    shape: str,
    in_band: bool | None,
    primacy: Mapping[str, Any] | None = None,
    recency: Mapping[str, Any] | None = None,
    margin: float = 0.05,
) -> str:
    """The claim's verdict from retrieve's shape class (:data:`lostmid.stats.shape.SHAPES`),
    whether the middle depth was inside the calibration band (None: not calibrated) and,
    when given, the primacy and recency intervals: an undetermined shape with one end
    resolved not above the middle rules a U out (:func:`lostmid.stats.shape.u_ruled_out`).

    >>> shape_verdict("U", True), shape_verdict("flat", None), shape_verdict("U", False)
    ('reproduced', 'not reproduced', 'inconclusive')
    >>> shape_verdict("undetermined", True)
    'inconclusive'
    >>> below = {"estimate": -0.33, "ci_low": -0.5, "ci_high": -0.14}
    >>> straddles = {"estimate": -0.07, "ci_low": -0.25, "ci_high": 0.12}
    >>> shape_verdict("undetermined", None, straddles, below)
    'not reproduced'
    """
    if in_band is False:
        return INCONCLUSIVE
    if shape == "undetermined":
        if primacy is not None and recency is not None:
            first, last = (Interval.from_record(c) for c in (primacy, recency))
            if u_ruled_out(first, last, margin):
                return NOT_REPRODUCED
        return INCONCLUSIVE
    return REPRODUCED if shape == "U" else NOT_REPRODUCED


def real_stage(
    scale: str, model: ModelSpec | str, seed: int, folder: Path, order: str = "scattered"
) -> dict[str, Any]:
    """Run (or resume: retrieve keeps its cells as stages) ``retrieve`` on ``model`` with
    the needles in ``order``."""
    from lostmid.behaviour.retrieve.run import run_retrieve

    config = REAL_SCALES[scale].retrieve_config(model, seed, order)
    run_replacing(run_retrieve, config, folder)
    return summary_record(read_json_object(folder / RESULT), config.model, folder)


def summary_record(result: Mapping[str, Any], model: str, folder: Path) -> dict[str, Any]:
    """What the section keeps of one ``retrieve.json``."""
    calibration = result.get("calibration") or None
    measured = result.get("measured_config") or result.get("config") or {}
    return {
        "model": model,
        "folder": str(folder),
        "task": result["task"],
        "length": measured.get("length"),
        "knob": None if calibration is None else calibration["knob"],
        "chosen": None if calibration is None else calibration["chosen"],
        "in_band": None if calibration is None else bool(calibration["in_band"]),
        "calibration": None if calibration is None else calibration["outcome"],
        "chat_template": bool(result["prompt"]["applied"]),
        "positions": result["positions"],
        "shape": result["shape"],
        "seconds": result["seconds"],
        "needle_order": measured.get("needle_order", "scattered"),
    }


@dataclass(frozen=True)
class RealBehaviour(SectionRuns):
    """The section's result: one summary record per checkpoint (:func:`summary_record`)."""

    result_file = RESULT
    option = "--real-behaviour"

    @classmethod
    def summary(cls, result: dict[str, Any], folder: Path) -> Mapping[str, Any]:
        return summary_record(result, str(result["model"]["model"]), folder)

    @property
    def claims(self) -> tuple[Claim, ...]:
        rows = []
        for run in self.runs:
            s = run["shape"]
            design = (
                f"{run['model']}: {run['task']} at {run['length']} tokens, "
                f"{len(run['positions'])} depths x {run['positions'][0]['n']} examples"
                + ("" if run["knob"] is None else f", {run['knob']} = {run['chosen']}")
            )
            middle = _middle(run)
            ours = (
                f"{design}; accuracy first/middle/last {_acc(run['positions'][0])} / "
                f"{_acc(middle)} / {_acc(run['positions'][-1])}; primacy "
                f"{_ci(s['primacy'])}, recency {_ci(s['recency'])}; shape {s['shape']}"
                + ("" if run["in_band"] is not False else "; middle outside the band")
            )
            verdict = shape_verdict(
                s["shape"], run["in_band"], s["primacy"], s["recency"], s.get("margin", 0.05)
            )
            rows.append(
                Claim(FIXED_ORDER_CLAIM if _fixed(run) else CLAIM, PAPER, ours, verdict, RULE)
            )
        return tuple(rows)

    def table(self) -> list[dict[str, Any]]:
        return [
            {
                "model": run["model"] + (" (fixed order)" if _fixed(run) else ""),
                "depth %": f"{_depth(p, run):.0f}",
                "examples": p["n"],
                "correct": p["correct"],
                "accuracy [Wilson 95%]": f"{p['accuracy']:.2f} [{p['ci_low']:.2f}, "
                f"{p['ci_high']:.2f}]",
            }
            for run in self.runs
            for p in run["positions"]
        ]

    def paragraphs(self) -> tuple[str, ...]:
        lines = [
            f"Runs: {self.source}. Each checkpoint answers RULER's multi-key needle task "
            "(find the number of one key among distractor needles in a haystack) with the "
            "needle at evenly spaced depths; greedy decoding, scored by the answer's "
            "presence in the reply. An instruct model gets its chat template and an answer "
            "prefix inside the assistant turn; a base model the raw prompt.",
        ]
        if any(_fixed(run) for run in self.runs):
            lines.append(
                "The needle-order control (fixed order): with RULER's scattered "
                "distractors the gold needle at depth 0 is the first needle and at 100 the "
                "last, so a model that names the first or the last needle when unsure "
                "draws a U by itself; in the control the distractors sit around the gold "
                "needle (half before, half after) and move with it, so only its depth "
                "changes. Its claim reads the depth effect at a fixed order."
            )
        for run in self.runs:
            how = "chat template" if run["chat_template"] else "raw prompt"
            order = ", fixed order" if _fixed(run) else ""
            n = sum(int(p["n"]) for p in run["positions"])
            lines.append(
                f"{run['model']} ({how}{order}, {run['seconds']:.0f} s; n = {n} answers, "
                f"{len(run['positions'])} depths x {run['positions'][0]['n']} at "
                f"{run['length']} tokens): "
                + (run["calibration"] or "difficulty fixed, no pilot")
                + f". Files: {run['folder']}."
            )
        lines.append("Rule: " + RULE + ".")
        return tuple(lines)


def _fixed(run: Mapping[str, Any]) -> bool:
    """Whether ``run`` is the needle-order control (an older record has no order)."""
    return run.get("needle_order", "scattered") == "fixed"


def _axis(run: Mapping[str, Any]) -> str:
    return "depth" if "depth" in run["positions"][0] else "index"


def _middle(run: Mapping[str, Any]) -> Mapping[str, Any]:
    """The position record at the shape's middle (a depth in %, or a gold index)."""
    axis, middle = _axis(run), float(run["shape"]["middle"])
    return next(p for p in run["positions"] if float(p[axis]) == middle)


def _depth(p: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    """Depth in % of a position record (a gold index as its share of the indices)."""
    if "depth" in p:
        return float(p["depth"])
    k = len(run["positions"])
    return 100.0 * run["positions"].index(p) / max(1, k - 1)


def _acc(p: Mapping[str, Any]) -> str:
    return f"{p['correct']}/{p['n']}"


def _ci(c: Mapping[str, Any]) -> str:
    """``+0.40 [+0.09, +0.62]``; the estimate alone where the interval is undefined (an
    end without information, None in a record; no width): :meth:`Interval.text`."""
    return Interval.from_record(c).text()


class RealBehaviourPlugin(PerModelSection):
    """The section (:class:`lostmid.reproduce.plan.Section`), key ``real_behaviour``;
    ``--real-behaviour`` chooses its scale (:func:`lostmid.reproduce.config.
    check_real_behaviour`)."""

    key = "real_behaviour"
    title = "Real checkpoints: does a real LLM lose the middle?"
    figure_prefix = "real-behaviour-"
    scales = REAL_SCALES
    folder = FOLDER
    figure = "retrieve.png"
    result_type = RealBehaviour
    stage = staticmethod(real_stage)

    def variants(self, scale: Any) -> tuple[tuple[str, dict[str, Any]], ...]:
        """One run per needle order of the scale (:attr:`RealScale.orders`); the
        scattered one keeps the plain folder and stage key."""
        return tuple(
            (ORDER_SUFFIX[order], {} if order == "scattered" else {"order": order})
            for order in scale.orders
        )


SECTION = RealBehaviourPlugin()
