"""The one registry of what lostmid can run: each capability declared once.

A :class:`Capability` names its command, its one-line summary, its configuration class,
its run function (``run_X(config, *, out, overwrite, console, ...)``), the kind of its
result file (:data:`lostmid.files.RESULT_KINDS`: the schema tag and the file's name) and
its headline numbers, read back from that file. The command line (:mod:`lostmid.cli`:
which commands exist, in which order, with which summary) and the sweep
(:mod:`lostmid.sweep.units`: which tasks a unit can be, what each runs and what it
reports) both read this list, so they cannot drift apart; a test checks that each
command module and each sweep task is one entry here.

Configuration classes and run functions are named as ``module:attribute`` and imported
only when used, so ``lostmid --help`` stays free of torch.

>>> [c.name for c in CAPABILITIES]  # doctest: +NORMALIZE_WHITESPACE
['theory', 'measure', 'train', 'train-retrieval', 'compare', 'reproduce', 'diagnose',
 'ablate', 'sweep', 'retrieve', 'score', 'remedies', 'series']
>>> capability("theory").result_file, capability("train-retrieval").command
('theory.json', 'train')
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lostmid.checks import check_choice
from lostmid.files import RESULT_KINDS, ResultKind, read_json
from lostmid.stats.verdicts import REPRODUCED, WORKS

Headline = Callable[[Mapping[str, Any]], dict[str, Any]]
"""The result document -> its headline numbers (JSON-ready)."""


def _import(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class Capability:
    """One thing lostmid can run.

    Attributes:
        name: the capability's name: its ``lostmid`` command (unless :attr:`command`
            says otherwise) and its ``sweep --task``.
        summary: one line: the command's help and its docs page.
        config: ``module:Class`` of its configuration (checked on construction).
        run: ``module:function`` that runs it: ``run(config, *, out, overwrite, console)``.
        kind: the kind of its main result file (a key of :data:`RESULT_KINDS`).
        result_file: that file's name in ``--out``.
        headline: the numbers a sweep's table and summary show for one run (a
            sweepable capability has them).
        command: the ``lostmid`` command that runs it (``train-retrieval`` is ``lostmid
            train --task kv|mqar``).
        sweepable: whether a sweep unit can be one.
    """

    name: str
    summary: str
    config: str
    run: str
    kind: str
    result_file: str
    headline: Headline | None = None
    command: str = ""
    sweepable: bool = True

    def __post_init__(self) -> None:
        if not self.command:
            object.__setattr__(self, "command", self.name)
        check_choice("result kind", self.kind, tuple(RESULT_KINDS))
        if self.sweepable and self.headline is None:
            raise ValueError(f"capability {self.name}: a sweepable one needs its headline")

    @property
    def result_kind(self) -> ResultKind:
        """Its result file's kind: the schema tag, what writes it."""
        return RESULT_KINDS[self.kind]

    def config_class(self) -> type:
        """The configuration class (imports its module)."""
        return _import(self.config)

    def run_function(self) -> Callable[..., Any]:
        """The run function (imports its module: torch for most)."""
        return _import(self.run)

    def headline_of(self, folder: Path) -> dict[str, Any]:
        """``{"file": result_file, **headline}`` read back from a run's folder."""
        numbers = (
            {}
            if self.headline is None
            else self.headline(read_json(Path(folder) / self.result_file))
        )
        return {"file": self.result_file, **numbers}


def _theory(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {"log10_peak_to_valley": doc.get("log10_peak_to_valley")}


def _measure(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "peak_to_valley": doc.get("summary", {}).get("peak_to_valley"),
        "max_relative_stderr": doc.get("max_relative_stderr"),
        "residual_strength_mean": doc.get("residual_strength_mean"),
    }


def _train(doc: Mapping[str, Any]) -> dict[str, Any]:
    last = doc["records"][-1] if doc.get("records") else {}
    return {
        "steps": last.get("step"),
        "heldout_loss": last.get("heldout_loss"),
        "tokens_per_second": doc.get("tokens_per_second"),
    }


def _train_retrieval(doc: Mapping[str, Any]) -> dict[str, Any]:
    learning = doc.get("learning") or {}
    return {
        "final_accuracy": doc.get("final_accuracy"),
        "order": learning.get("order"),
        "structural_primacy": learning.get("structural_primacy"),
        "cpu_seconds": doc.get("cpu_seconds"),
    }


def _reproduce(doc: Mapping[str, Any]) -> dict[str, Any]:
    verdicts = [c["verdict"] for c in doc.get("claims", [])]
    return {"claims": len(verdicts), "reproduced": verdicts.count(REPRODUCED)}


def _retrieve(doc: Mapping[str, Any]) -> dict[str, Any]:
    summary = doc.get("summary") or {}
    return {
        "mean_accuracy": summary.get("mean_accuracy"),
        "gap": (summary.get("gap") or {}).get("estimate"),
    }


def _remedies(doc: Mapping[str, Any]) -> dict[str, Any]:
    arms = doc.get("remedies") or []
    verdicts = [r.get("verdict") for r in arms if r.get("verdict")]
    return {"remedies": len(arms), "works": sum(v == WORKS for v in verdicts)}


CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        "theory",
        "Exact theory: the influence of every position on the target after H layers.",
        "lostmid.theory.run:TheoryConfig",
        "lostmid.theory.run:run_theory",
        "theory",
        "theory.json",
        _theory,
    ),
    Capability(
        "measure",
        "Measure the influence profile ||d h_t / d x_j||_F of a real transformer.",
        "lostmid.influence.config:MeasureConfig",
        "lostmid.influence.run:run_measure",
        "measure",
        "measure.json",
        _measure,
    ),
    Capability(
        "train",
        "Train a small causal LM and measure its position bias at log-spaced checkpoints.\n\n"
        "With --task kv|mqar the model learns retrieval instead, evaluated by gold position.",
        "lostmid.train.config:TrainConfig",
        "lostmid.train.run:run_training",
        "training",
        "dynamics.json",
        _train,
    ),
    Capability(
        "train-retrieval",
        "Train a small model on a retrieval task (kv, mqar) and evaluate it by gold position.",
        "lostmid.behaviour.training.config:RetrievalTrainConfig",
        "lostmid.behaviour.training.run:run_retrieval_training",
        "retrieval training",
        "retrieval.json",
        _train_retrieval,
        command="train",
    ),
    Capability(
        "compare",
        "Theory (given, predicted, fitted) and naive baselines against measured profiles.",
        "lostmid.compare.config:CompareConfig",
        "lostmid.compare.run:run_compare",
        "compare",
        "compare.json",
        sweepable=False,
    ),
    Capability(
        "reproduce",
        "Main job: the paper's core experiments end to end -> report.html, claims.json.",
        "lostmid.reproduce.config:ReproduceConfig",
        "lostmid.reproduce.run:run_reproduce",
        "reproduce",
        "reproduce.json",
        _reproduce,
    ),
    Capability(
        "diagnose",
        "Your model in every trained-model study: its profile against random-init twins, "
        "accuracy by depth, the link, the remedies -> report.html.",
        "lostmid.reproduce.diagnose:DiagnoseConfig",
        "lostmid.reproduce.diagnose:run_diagnose",
        "reproduce",
        "reproduce.json",
        sweepable=False,
    ),
    Capability(
        "ablate",
        "Ablation ladder: which real ingredient (MLP, logits, positions, norms) breaks the theory.",
        "lostmid.ablate.config:AblationConfig",
        "lostmid.ablate.run:run_ablate",
        "ablation",
        "ablation.json",
        sweepable=False,
    ),
    Capability(
        "sweep",
        "Run a grid of units (each a run of one --task) in-process or on Ray; resumable.",
        "lostmid.sweep.run:SweepConfig",
        "lostmid.sweep.run:run_sweep",
        "sweep",
        "sweep.json",
        sweepable=False,
    ),
    Capability(
        "retrieve",
        "Retrieval accuracy by gold position (Liu's kv, RULER's needle, MQAR, your data), "
        "over one length or a length x depth grid.",
        "lostmid.behaviour.retrieve.config:RetrieveConfig",
        "lostmid.behaviour.retrieve.run:run_retrieve",
        "retrieval",
        "retrieve.json",
        _retrieve,
    ),
    Capability(
        "score",
        "Accuracy by position from another tool's per-sample results (lm-eval's logged "
        "samples of an exported task): intervals and the U's verdict.",
        "lostmid.behaviour.formats.samples:ScoreConfig",
        "lostmid.behaviour.formats.samples:run_score",
        "score",
        "score.json",
        sweepable=False,
    ),
    Capability(
        "remedies",
        "Remedies for the valley against the baseline at equal budget, over seeds.",
        "lostmid.remedies.config:RemediesConfig",
        "lostmid.remedies.run:run_remedies",
        "remedies",
        "remedies.json",
        _remedies,
    ),
    Capability(
        "series",
        "A training run's checkpoints against the same random-init twins: the change at "
        "each peak by step, and whether the valley deepens along the series.",
        "lostmid.pretrained.series.config:SeriesConfig",
        "lostmid.pretrained.series.run:run_series",
        "series",
        "series.json",
        sweepable=False,
    ),
)
BY_NAME: Mapping[str, Capability] = {c.name: c for c in CAPABILITIES}


def capability(name: str) -> Capability:
    """The capability ``name``, or one line naming those there are."""
    check_choice("capability", name, tuple(BY_NAME))
    return BY_NAME[name]


def commands() -> tuple[str, ...]:
    """The ``lostmid`` commands, in the order of ``lostmid --help``."""
    return tuple(dict.fromkeys(c.command for c in CAPABILITIES))


def sweepable() -> tuple[Capability, ...]:
    """The capabilities a sweep unit can be."""
    return tuple(c for c in CAPABILITIES if c.sweepable)
