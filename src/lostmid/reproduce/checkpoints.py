"""The real-checkpoint section of ``lostmid reproduce``: does pretraining deepen the
valley, does the U persist, where is the valley?

The study itself (a checkpoint and its random-init twins measured on the same inputs,
the saved profiles, the comparisons) is :mod:`lostmid.pretrained`; this section plans it
as one stage at a scale (:data:`CHECKPOINT_SCALES`) or reads a finished study's folder
(``--checkpoints DIR``), states its claims and draws its part of the report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from lostmid.models.load import check_trained_model
from lostmid.models.spec import ModelSpec
from lostmid.pretrained.plot import plot_study
from lostmid.pretrained.study import (
    VARIANTS,
    StudyConfig,
    check_study_folder,
    read_study_config,
    run_study,
    study_comparisons,
    study_facts,
    variant_of,
)
from lostmid.reproduce.plan import REAL_CHECKPOINT_PRIORITY, PlannedStage, StandardSection

CHECKPOINT_SCALES = {
    "quick": StudyConfig(
        checkpoints=("smollm2-135m",),
        lengths=(128,),
        kinds=("random", "text"),
        inputs=3,
        twins=2,
        probes=1,
    ),  # fmt: skip
    "default": StudyConfig(
        lengths=(512,),
        kinds=("random", "text", "records"),
        inputs=4,
        twins=2,
        probes=1,
        controls=("requantised", "twin-inits", "quantised-twins"),
    ),
    "full": StudyConfig(
        lengths=(512, 2048),
        inputs=16,
        twins=3,
        probes=1,
        controls=("requantised", "twin-inits", "quantised-twins"),
        control_inputs=8,
        control_twins=2,
    ),
}
"""The section's scales. ``quick``: SmolLM2 only, L = 128, random and text inputs, 3
inputs, 2 twins (about a minute once the checkpoint is cached). ``default``: both
checkpoints, L = 512, random, text and records, 4 inputs, 2 twins and the quantisation
control (about 20 CPU-minutes; its intervals are wide: 16 inputs give 0.28-0.53 decade on
the change, docs/BENCHMARKS.md). ``full``: L = 512 and 2048, every kind, 16 inputs, 3
twins and the control (hours). A folder holding ``study.json`` (a finished
:func:`lostmid.pretrained.study.run_study`, e.g. ``benchmarks/bench_checkpoints.py``) is
read back."""
DEEPEN_CLAIM = "Pretraining deepens the valley"
DEEPEN_PAPER = "log10 peak-to-valley about 2 at initialisation, about 3 after pretraining"
PERSIST_CLAIM = "The U persists through pretraining"
PERSIST_PAPER = "training does not overcome the valley: the U is still there, as deep"
MIDDLE_CLAIM = "A pretrained model's valley is in the middle"
MIDDLE_PAPER = "the dead zone: the middle of the context"


def scale_study(
    scale: str, models: Sequence[str] = (), twin_init_std: float | None = None
) -> StudyConfig:
    """The study of a scale, on ``models`` when given (else the scale's checkpoints),
    its twins initialised with ``twin_init_std`` when given.

    >>> scale_study("quick", ("./my-model",)).checkpoints
    ('./my-model',)
    """
    config = CHECKPOINT_SCALES[scale]
    config = replace(config, checkpoints=tuple(models)) if models else config
    return replace(config, twin_init_std=twin_init_std) if twin_init_std is not None else config


def checkpoint_stage(
    scale: str,
    folder: Path,
    models: Sequence[str] = (),
    specs: Sequence[ModelSpec] = (),
    twin_init_std: float | None = None,
) -> dict[str, Any]:
    """Run (or resume) the study of ``scale`` (on ``models`` when given, loaded as their
    ``specs`` say, twins at ``twin_init_std`` when given) in ``folder``; the comparisons'
    records."""
    study = scale_study(scale, models, twin_init_std)
    found = run_study(study, folder, specs={s.name: s for s in specs})
    return {"cells": {cell: c.record() for cell, c in found.items()}}


EARLIER_READOUT = "single"
"""The readout shown beside the default for one release, so a reader sees what changed."""


@dataclass(frozen=True)
class CheckpointSection:
    """The real-checkpoint section: where the profiles are and each cell's comparison
    under the default readout (``cells``) and the earlier one (``earlier``)."""

    source: str
    folder: Path
    config: StudyConfig
    cells: dict[str, dict[str, Any]]
    earlier: dict[str, dict[str, Any]] = field(default_factory=dict)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each checkpoint's facts from its saved cells (:func:`lostmid.pretrained.study.
    study_facts`): whether it is at initialisation, the twins' initialiser range."""

    @classmethod
    def of(
        cls,
        value: str,
        results: Mapping[str, Any],
        out: Path,
        models: Sequence[str] = (),
        twin_init_std: float | None = None,
    ) -> CheckpointSection | None:
        """Judged from the study's folder (its saved profiles): a scale's (on ``models``
        when given), once its stage has finished, or a finished study's folder."""
        if value == "off":
            return None
        if value in CHECKPOINT_SCALES:
            if results.get(f"checkpoints-{value}") is None:
                return None
            folder, config = out / "checkpoints", scale_study(value, models, twin_init_std)
            source = f"{value} scale"
        else:
            folder, config = Path(value), read_study_config(Path(value))
            source = f"the study in {value}"
        found = study_comparisons(config, folder)
        if not found:
            check_study_folder(folder)
        earlier = study_comparisons(config, folder, readout=EARLIER_READOUT)
        return cls(
            source,
            folder,
            config,
            {k: c.record() for k, c in found.items()},
            {k: c.record() for k, c in earlier.items()},
            study_facts(config, folder),
        )

    @property
    def claims(self) -> tuple[Any, ...]:
        from lostmid.compare.claims import Claim

        claims = []
        for cell, c in self.cells.items():
            if variant_of(cell) is not None:
                continue  # read inside its cell's rows
            p = c["pretrained"]
            design = f"{cell}: {c['inputs']} inputs, {c['seeds']} twins, {c['readout']} readout"
            # the cell is CHECKPOINT/L<L>/KIND, and a checkpoint's path may hold slashes
            name = next((n for n in self.config.checkpoints if cell.startswith(f"{n}/")), "")
            twins = self._twin_words(name)
            untrained = self.facts.get(name, {}).get("untrained") is True
            ours = (
                f"{design}; log10 PtV {_fmt(p['log10_ptv'])} vs twins "
                f"{_fmt(c['twins']['log10_ptv'])}; {twins}; quantised once more: "
                f"{_quantisation(c)}"
            )
            where = (
                f"{design}; valley at {_fmt(p['valley_fraction'])} of the context "
                f"(twins {_fmt(c['twins']['valley_fraction'])})"
            )
            variants = self._variants(cell)
            for claim, paper, key in (
                (DEEPEN_CLAIM, DEEPEN_PAPER, "deepens"),
                (PERSIST_CLAIM, PERSIST_PAPER, "persists"),
            ):
                verdict, rule, text = robust_change(key, c, variants)
                shape = (
                    f"; log10 first / valley {_fmt(p['log10_sink_depth'])}, last / valley "
                    f"{_fmt(p['log10_last_depth'])}"
                    if key == "persists"
                    else ""
                )
                claims.append(
                    _claim(Claim, claim, paper, f"{ours}{shape}; {text}", verdict, rule, untrained)
                )
            middle = c["middle"]
            claims.append(
                _claim(
                    Claim,
                    MIDDLE_CLAIM,
                    MIDDLE_PAPER,
                    where,
                    middle["verdict"],
                    middle["rule"],
                    untrained,
                )
            )
        return tuple(claims)

    def _variants(self, cell: str) -> dict[str, dict[str, Any]]:
        """The cells that read the same pretrained profiles against other twins, by what
        the twins are (their initialiser range, quantised as the file)."""
        found = {}
        for key, value in self.cells.items():
            suffix = variant_of(key)
            if suffix is not None and key == f"{cell}/{suffix}":
                found[_twins_words(suffix)] = value
        return found

    def _twin_words(self, name: str) -> str:
        """The stated twins' initialiser range and where it came from, in words."""
        init = self.facts.get(name, {}).get("twin_init") or {}
        if init.get("value") is None:
            return "twins' initialiser range not recorded"
        return f"twins initialised with std {init['value']:.3g} ({init.get('from', 'unknown')})"

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for cell, c in self.cells.items():
            old = self.earlier.get(cell, {})
            rows.append(
                {
                    "cell": cell,
                    "log10 PtV pretrained": _fmt(c["pretrained"]["log10_ptv"]),
                    "log10 PtV twins": _fmt(c["twins"]["log10_ptv"]),
                    "change": _fmt(c["difference"]["log10_ptv"]),
                    "deepens": c["deepens"]["verdict"],
                    "U persists": c["persists"]["verdict"],
                    "valley (fraction) pretrained": _fmt(c["pretrained"]["valley_fraction"]),
                    "valley twins": _fmt(c["twins"]["valley_fraction"]),
                    "quantisation shift": _quantisation(c),
                    "change, single-position readout": _fmt(
                        old.get("difference", {}).get("log10_ptv", {})
                    ),
                    "deepens, single-position readout": old.get("deepens", {}).get(
                        "verdict", "n/a"
                    ),
                }
            )
        return rows

    def paragraphs(self) -> tuple[str, ...]:
        untrained = [n for n, f in self.facts.items() if f.get("untrained") is True]
        said = (
            (
                f"{', '.join(untrained)}: at initialisation (every normalisation layer's "
                "gains are still equal), so it is compared with its twins as one untrained "
                "model with others: 'pretrained' below means the model as given, and its "
                "rows about pretraining read not applicable.",
            )
            if untrained
            else ()
        )
        return said + (
            f"Profiles: {self.source}. Each checkpoint and its random-init twins "
            "(same architecture and initialiser range, one per seed) are measured on the "
            "same inputs of each kind (random token ids, English prose, Liu's key-value "
            "records prompts, and the prose in the model's own chat template where it has "
            "one); an input's profile is the Jacobian norm of the final hidden "
            "state at the last position with respect to each input embedding (measure's "
            "influence). Every profile is saved in the study's folder, so any verdict here "
            "can be judged again without a model.",
            "Readout (binned): positions 2..L-1 are cut into 32 bins (at least 4 positions "
            "each) and each bin's level is its mean influence; the valley is the lowest "
            "level, the peak the largest of the first position, the last and the bins. The "
            "single smallest position of a mean over a few noisy inputs reads a profile "
            "that is only noisier as deeper (1.3-1.7 decades on constructed studies with no "
            "true change, at 4-8 inputs); the binned levels do not (+0.09). The table also "
            "shows the change and the verdict under that earlier single-position readout.",
            "Quantisation control: the checkpoints are 4-bit files. Where the study "
            "measured the pretrained model with its weights quantised once more (every "
            "matrix re-rounded to 4 bits, about the size of the file's own error), a cell's "
            "'deepens' and 'persists' stand only if that moves its log10 peak-to-valley by "
            "less than 0.5 decade (the whole 95% interval of the shift inside +-0.5).",
            "Intervals: 95% jackknife-t over inputs (leave one input out of the pretrained "
            "model and every twin; the twins' spread over seeds added), a percentile "
            "bootstrap for the valley's position. The rules were stated before the runs "
            "(lostmid.compare.pretraining) and fed constructed studies where the answer is "
            "yes, no and undecided, and a null where the pretrained side is only noisier.",
        )

    def figure(self, folder: Path) -> Path:
        """``checkpoints.png``: mean profiles, pretrained against each twin, per cell."""
        from lostmid.report.plots import save_figure

        return save_figure(plot_study(self.folder, self.config), folder / "checkpoints.png")

    def record(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "folder": str(self.folder),
            "config": asdict(self.config),
            "cells": self.cells,
            "earlier_readout": {"readout": EARLIER_READOUT, "cells": self.earlier},
            "facts": self.facts,
            "claims": list(self.claims),
        }


class CheckpointsPlugin(StandardSection):
    """The real-checkpoint section (:class:`lostmid.reproduce.plan.Section`): SmolLM2 and
    Gemma 3 against their twins at birth, does pretraining deepen the valley."""

    key = "checkpoints"
    title = "Real checkpoints: does pretraining deepen the valley, and where is it?"
    figure_prefix = "checkpoints"

    def check(self, config: Any) -> None:
        value = config.scale.checkpoints
        if value != "off" and value not in CHECKPOINT_SCALES:
            check_study_folder(Path(value))
        if value in CHECKPOINT_SCALES and config.trained:
            for spec in config.trained_specs(()):
                for length in CHECKPOINT_SCALES[value].lengths:
                    check_trained_model(
                        spec.name,
                        length,
                        option="--trained",
                        dtype=spec.dtype,
                        trust_remote_code=spec.trust_remote_code,
                    )

    def stages(self, config: Any, device: str, out: Path) -> list[PlannedStage]:
        scale = config.scale.checkpoints
        if scale not in CHECKPOINT_SCALES:
            return []
        # the models and how they load enter the stage's key only when set
        models = {"models": list(config.trained)} if config.trained else {}
        specs = config.trained_specs(())
        loading = {s.name: s.options() for s in specs if s.options()}
        options = {"options": loading} if loading else {}
        init = config.twin_init_std
        options |= {"twin_init_std": init} if init is not None else {}
        return [
            PlannedStage(
                f"checkpoints-{scale}",
                {"scale": scale, "seed": 0, "record": 3} | models | options,
                partial(checkpoint_stage, scale, out / "checkpoints", config.trained, specs, init),
                dict,
                priority=REAL_CHECKPOINT_PRIORITY,
            )
        ]

    def collect(
        self, config: Any, results: Mapping[str, Any], out: Path
    ) -> CheckpointSection | None:
        return CheckpointSection.of(
            config.scale.checkpoints, results, out, config.trained, config.twin_init_std
        )

    def figures(self, value: CheckpointSection, folder: Path) -> dict[str, Path]:
        return {"checkpoints": value.figure(folder)}


SECTION = CheckpointsPlugin()

ROBUST_RULE = (
    "read at every peak (the largest of the ends and the bins, the paper's ratio read "
    "literally; the first position; the first bin, primacy without the sink; the last "
    "position, the recency anchor) against every set of twins measured (the stated "
    "initialiser range, the study's range of others, twins quantised as the file): the "
    "common verdict when every reading gives it, not robust when one reading reproduces "
    "the claim and another does not, else inconclusive. Each reading: "
)
NOT_APPLICABLE_NOTE = (
    "not applicable: the model is at initialisation (every normalisation layer's gains "
    "are still equal, lostmid.models.untrained), so no claim about pretraining is read "
    "from it"
)


def _twins_words(suffix: str) -> str:
    """How a claim row names the twins of a control's cell (:func:`lostmid.pretrained.
    study.variant_of`)."""
    init = VARIANTS["twin-inits"]
    return (
        f"twins at std {suffix.removeprefix(init)}"
        if suffix.startswith(init)
        else "quantised twins"
    )


def robust_change(
    key: str, cell: Mapping[str, Any], variants: Mapping[str, Mapping[str, Any]]
) -> tuple[str, str, str]:
    """``deepens`` or ``persists`` read at every peak against every set of twins: the
    verdict (:func:`lostmid.stats.verdicts.across`), its rule and the readings in words."""
    from lostmid.compare.pretraining import PEAKS
    from lostmid.stats.verdicts import across

    words, parts = [], []
    for twins, c in {"stated twins": cell, **variants}.items():
        peaks = c.get("peaks", {}).get(key)
        if not peaks:  # judged before peaks were read: the largest alone
            peaks = {"largest": c[key]}
        shown = []
        for peak, verdict in peaks.items():
            change = c["difference"].get(PEAKS[peak], {})
            shown.append(f"{peak} {_fmt(change)} {verdict['verdict']}")
            words.append(verdict["verdict"])
        parts.append(f"{twins}: " + ", ".join(shown))
    verdict = across(words)
    agree = "the readings agree" if len(set(words)) == 1 else "the readings disagree"
    inner = cell.get("peaks", {}).get(key, {}).get("largest", cell[key])["rule"]
    return verdict, ROBUST_RULE + inner, f"change by peak ({agree}): " + "; ".join(parts)


def _claim(
    make: Any, claim: str, paper: str, text: str, verdict: str, rule: str, untrained: bool
) -> Any:
    """A claims row; on a model at initialisation, *not applicable* with the reason."""
    from lostmid.stats.verdicts import NOT_APPLICABLE

    if untrained:
        return make(claim, paper, f"{text}; {NOT_APPLICABLE_NOTE}", NOT_APPLICABLE, rule)
    return make(claim, paper, text, verdict, rule)


def _quantisation(cell: Mapping[str, Any]) -> str:
    """The quantisation control of a cell's record, in words."""
    control = cell.get("quantisation")
    if not control:
        return "not measured"
    return f"shift {_fmt(control['shift'])}, {control['verdict']}"


def _fmt(e: dict[str, Any], digits: int = 2) -> str:
    if e.get("value") is None:
        return "n/a"
    if e.get("low") is None:
        return f"{e['value']:.{digits}f}"
    return f"{e['value']:.{digits}f} [{e['low']:.{digits}f}, {e['high']:.{digits}f}]"
