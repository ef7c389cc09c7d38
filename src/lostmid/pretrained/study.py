"""Real checkpoints against their twins at birth: does pretraining deepen the valley?

For each checkpoint of the design (a registry checkpoint such as ``smollm2-135m`` or
``gemma3-270m``, a Hugging Face folder, a .gguf file) and each length L, the pretrained
model and S random-init twins (``--init random``, seeds 0..S-1) are measured on the same
N inputs of each kind (:mod:`lostmid.pretrained.inputs`). One influence profile per
input (the Jacobian norm of the final hidden state at position L with respect to each
input embedding, ``measure``'s definition, ``probes`` Rademacher probes) is saved as it
is computed (:mod:`lostmid.pretrained.cells`), so a killed study resumes where it
stopped; :func:`study_comparisons` reads them back and judges with
:func:`lostmid.compare.pretraining.compare_pretraining`. The design is ``study.json`` in
the study's folder (:func:`read_study_config`).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.behaviour.decoding.tokenizers import Tokenizer, tokenizer_for_spec
from lostmid.compare.pretraining import PretrainingComparison, compare_pretraining
from lostmid.errors import UserError
from lostmid.files import read_json_object, write_text
from lostmid.influence import influence_profile
from lostmid.models import CHECKPOINTS
from lostmid.models.ablations import global_attention_overrides
from lostmid.models.identity import content_of
from lostmid.models.load import gguf_checkpoint, resolve_config
from lostmid.models.quantise import file_scheme, quantise_like, requantise
from lostmid.models.spec import ModelSpec
from lostmid.models.untrained import untrained_facts
from lostmid.pretrained.cells import profiles_path, read_cell, read_rows, rows_to_keep, write_rows
from lostmid.pretrained.inputs import INPUT_KINDS, INPUT_LABELS, input_ids

CONTROLS = ("requantised", "global-twins", "twin-inits", "quantised-twins")
"""Models a study may add beside the pretrained one and its twins: ``requantised``, the
pretrained weights quantised once more (:mod:`lostmid.models.quantise`), the
quantisation control a cell's depth must clear; ``global-twins``, for a checkpoint with
sliding-window layers, twins whose every layer attends globally (``global0``..), so that
a change is judged with and without the windows' part (cells ``.../KIND/global-twins``);
``twin-inits``, twins built with each initialiser range of :data:`INIT_RANGE` other
than the stated one (``init0.02-twin0``.., cells ``.../KIND/twins-init0.02``), since a
file need not say how its model was initialised; ``quantised-twins``, the twins rounded
through the checkpoint's own GGUF scheme (:func:`lostmid.models.quantise.quantise_like`;
``qtwin0``.., cells ``.../KIND/quantised-twins``), so that both sides of a change carry
the same quantisation."""
INIT_RANGE = (0.02, 0.08)
"""The twins' initialiser ranges (std of the normal init) read beside the stated one:
transformers' default, and four times it (GPT-2-style small values to wide ones;
SmolLM2's published 1/24 lies between)."""
VARIANTS = {"twin-inits": "twins-init", "quantised-twins": "quantised-twins"}
"""The cells a control adds beside each cell (``CELL/<suffix>``)."""
STUDY_JSON = "study.json"
"""The design of a study, in its folder."""


@dataclass(frozen=True)
class StudyConfig:
    """The design: checkpoints x lengths x input kinds, one pretrained model and
    ``twins`` random-init twins each, ``inputs`` inputs per kind, ``probes`` per input."""

    checkpoints: tuple[str, ...] = ("smollm2-135m", "gemma3-270m")
    lengths: tuple[int, ...] = (512,)
    kinds: tuple[str, ...] = INPUT_KINDS
    inputs: int = 12
    twins: int = 3
    probes: int = 2
    seed: int = 0
    controls: tuple[str, ...] = ()
    twin_init_std: float | None = None
    control_inputs: int | None = None
    control_twins: int | None = None

    def __post_init__(self) -> None:
        for control in self.controls:
            if control not in CONTROLS:
                raise UserError(f"unknown control {control!r}; controls: {', '.join(CONTROLS)}")
        if not self.checkpoints or not all(str(n).strip() for n in self.checkpoints):
            raise UserError(
                "a study needs at least one model: a registry checkpoint "
                f"({', '.join(CHECKPOINTS)}), a Hugging Face folder, a .gguf file or a hub id"
            )
        for kind in self.kinds:
            if kind not in INPUT_KINDS:
                raise UserError(f"unknown input kind {kind!r}; kinds: {', '.join(INPUT_KINDS)}")
        if self.inputs < 2 or self.twins < 1 or self.probes < 1:
            raise UserError("a study needs >= 2 inputs, >= 1 twin and >= 1 probe")
        if any(length < 8 for length in self.lengths):
            raise UserError("lengths must be >= 8 tokens")
        if self.twin_init_std is not None and not 0 < self.twin_init_std < 1:
            raise UserError(
                f"--twin-init-std {self.twin_init_std}: the twins' initialiser range is a "
                "standard deviation in (0, 1), e.g. 0.02"
            )
        for name in ("control_inputs", "control_twins"):
            value = getattr(self, name)
            if value is not None and value < (2 if name == "control_inputs" else 1):
                raise UserError(f"a study's {name} is >= 2 inputs / >= 1 twin, or unset")

    def count(self, label: str) -> int:
        """How many inputs a model of the study is measured on: every input for the
        pretrained model and its twins, ``control_inputs`` (when set) for a control."""
        main = label == "pretrained" or (label.startswith("twin") and label[4:].isdigit())
        return self.inputs if main or self.control_inputs is None else self.control_inputs


@dataclass
class StudyProgress:
    """Lines of progress with elapsed time (to a terminal or a log file alike)."""

    say: Callable[[str], None] = print
    start: float = field(default_factory=time.perf_counter)

    def __call__(self, message: str) -> None:
        self.say(f"[{time.perf_counter() - self.start:7.0f} s] {message}")


@dataclass(frozen=True)
class StudyModel:
    """One model a study measures for a checkpoint: its cells' label, how it is built
    (``init``, ``seed``, config overrides) and what is done to its weights after."""

    label: str
    init: str
    seed: int
    overrides: Mapping[str, Any] | None = None
    after: str | None = None  # "requantised" | "quantised-twin"


def study_models(config: StudyConfig, name: str, spec: ModelSpec) -> list[StudyModel]:
    """The models of ``config`` for checkpoint ``name``: the pretrained model, its twins
    at the stated initialiser range, and the controls (:data:`CONTROLS`)."""
    resolved = resolve_config(name, trust_remote_code=spec.trust_remote_code)
    stated = (
        {"initializer_range": config.twin_init_std} if config.twin_init_std is not None else None
    )
    twins = range(config.twins)
    controls = range(config.control_twins or config.twins)
    models = [StudyModel("pretrained", "pretrained", 0)]
    models += [StudyModel(f"twin{s}", "random", s, stated) for s in twins]
    if "requantised" in config.controls:
        models.append(StudyModel("requantised", "pretrained", 0, after="requantised"))
    globalise = global_attention_overrides(resolved)
    if "global-twins" in config.controls and globalise is not None:
        models += [StudyModel(f"global{s}", "random", s, globalise) for s in twins]
    if "twin-inits" in config.controls:
        primary = stated_init(config, resolved)
        for value in INIT_RANGE:
            if abs(value - primary) > 1e-9:
                models += [
                    StudyModel(f"init{value:g}-twin{s}", "random", s, {"initializer_range": value})
                    for s in controls
                ]
    if "quantised-twins" in config.controls and _quantised(name):
        models += [
            StudyModel(f"qtwin{s}", "random", s, stated, after="quantised-twin") for s in controls
        ]
    return models


def _quantised(name: str) -> bool:
    """Whether ``name`` is a GGUF file with quantised tensors (the twins of any other
    model are not quantised: there is no scheme to match)."""
    found = gguf_checkpoint(name)
    return found is not None and any(t.startswith("Q") for t in found[1].get("quant_types", {}))


def stated_init(config: StudyConfig, resolved: Any) -> float:
    """The twins' initialiser range: ``--twin-init-std`` when given, else what loading
    the model sets (a registry checkpoint's published value, a folder's config, or
    transformers' default)."""
    if config.twin_init_std is not None:
        return float(config.twin_init_std)
    return float(getattr(resolved, "initializer_range", 0.02))


def run_study(
    config: StudyConfig,
    out: Path,
    *,
    progress: Callable[[str], None] | None = None,
    specs: Mapping[str, ModelSpec] | None = None,
) -> dict[str, Any]:
    """Measure every cell of the design that is not on disk yet; return the comparisons.

    Resumable: each model's rows are written after every input, and rows already on
    disk (for the same inputs and the same model content: the file records both) are
    kept. ``specs``: how a checkpoint loads when not with the defaults (its tokenizer,
    dtype, remote code).
    """
    out = Path(out)
    say = StudyProgress(progress or print)
    write_text(out / "study.json", json.dumps(asdict(config), indent=1) + "\n")
    spec_of = {name: (specs or {}).get(name, ModelSpec(name)) for name in config.checkpoints}
    tokenizers = {name: tokenizer_for_spec(spec_of[name]) for name in config.checkpoints}
    # Each model is built once and measured on every input kind: a random twin of Gemma 3
    # took 6-10 s to build on one thread, 12 builds when the kinds were outermost.
    for name in config.checkpoints:
        for model in study_models(config, name, spec_of[name]):
            measure_model(config, out, name, spec_of[name], model, tokenizers[name], say)
    return study_comparisons(config, out)


def measure_model(
    config: StudyConfig,
    out: Path,
    name: str,
    spec: ModelSpec,
    model: StudyModel,
    tok: Tokenizer,
    say: Callable[[str], None],
) -> None:
    """Measure one model of checkpoint ``name`` (built once) on every cell of the design
    (each length and input kind) whose rows are not all on disk yet, writing its rows
    after every input; ``tok`` makes the inputs, so models measured with the same
    tokenizer see the same inputs. Rows on disk for other inputs or other model bytes
    are measured again (:func:`lostmid.pretrained.cells.rows_to_keep`)."""
    content = content_of(name)
    wanted = config.count(model.label)
    cells = [
        (kind, length, path, rows_to_keep(*read_cell(path), model.init, content))
        for length in config.lengths
        for kind in config.kinds
        for path in [profiles_path(out, name, length, kind, model.label)]
    ]
    left = [
        cell
        for cell in cells
        if not _complete(cell[3], wanted, cell[1])
        and not (cell[0] == "chat" and tok.chat_template is None)
    ]
    if not left:
        return
    loaded = spec.load(init=model.init, seed=model.seed, config_overrides=model.overrides)
    changed = _after(model, loaded)
    for kind, length, path, rows in left:
        loaded.check_length(length)
        ids = input_ids(kind, tok, loaded.vocab_size, config.inputs, length, config.seed)
        done = list(rows) if rows.ndim == 2 and rows.shape[1:] == (length,) else []
        facts = {
            "checkpoint": name,
            "model": model.label,
            "init": model.init,
            "seed": model.seed,
            "length": length,
            "kind": kind,
            "probes": config.probes,
            "sha256": (loaded.checkpoint or {}).get("sha256"),
            "content_sha256": None if content is None else content["sha256"],
            "init_facts": (loaded.checkpoint or {}).get("init_facts", {}),
            "twin_init": _twin_init(config, model, loaded),
            "requantised": changed if model.after == "requantised" else None,
            "quantised": changed if model.after == "quantised-twin" else None,
            "untrained": untrained_facts(loaded.model) if model.init != "random" else None,
        }
        for i in range(len(done), wanted):
            t0 = time.perf_counter()
            profile = influence_profile(
                loaded, ids[i : i + 1], probes=config.probes, seed=config.seed + i
            )
            done.append(profile.influence)
            write_rows(path, np.stack(done), facts)
            say(
                f"{name} L={length} {INPUT_LABELS[kind]}, {model.label}: input "
                f"{i + 1}/{wanted} ({time.perf_counter() - t0:.1f} s)"
            )
    del loaded


def _twin_init(config: StudyConfig, model: StudyModel, loaded: Any) -> dict[str, Any] | None:
    """A twin's initialiser range and where it came from (None for a trained model)."""
    if model.init != "random":
        return None
    value = getattr(loaded.model.config, "initializer_range", None)
    if model.overrides and "initializer_range" in model.overrides:
        stated = config.twin_init_std is not None and model.label.startswith(("twin", "qtwin"))
        source = "--twin-init-std" if stated else "the study's range of initialisations"
    else:
        facts = (loaded.checkpoint or {}).get("init_facts", {}).get("initializer_range")
        source = facts["from"] if facts else "the model's config"
    return {"value": value, "from": source}


def _after(model: StudyModel, loaded: Any) -> dict[str, Any] | None:
    """What is done to a model's weights once built: a second quantisation of the
    pretrained model, or the checkpoint's own scheme on a twin."""
    if model.after == "requantised":
        return requantise(loaded.model)
    if model.after == "quantised-twin":
        try:
            scheme, note = file_scheme((loaded.checkpoint or {}).get("quant_types") or {})
        except ValueError:
            raise UserError(
                f"--model {loaded.spec}: quantised twins match a quantised GGUF file, and "
                "this model's weights are not quantised; drop the quantised-twins control"
            ) from None
        return quantise_like(loaded.model, scheme) | {"note": note}
    return None


def _complete(rows: np.ndarray, wanted: int, length: int) -> bool:
    """Whether a cell's saved rows hold every input it wants at this length."""
    return bool(rows.ndim == 2 and rows.shape[0] >= wanted and rows.shape[1] == length)


def study_comparisons(
    config: StudyConfig, out: Path, readout: str = "binned"
) -> dict[str, PretrainingComparison]:
    """The comparisons of every complete cell on disk under ``readout`` (missing cells are
    left out); nothing is loaded but the saved profiles."""
    found: dict[str, PretrainingComparison] = {}
    for name in config.checkpoints:
        for length in config.lengths:
            for kind in config.kinds:
                pre = read_rows(profiles_path(Path(out), name, length, kind, "pretrained"))
                twins = [
                    read_rows(profiles_path(Path(out), name, length, kind, f"twin{s}"))
                    for s in range(config.twins)
                ]
                n = min([pre.shape[0], *(t.shape[0] for t in twins)])
                if n < 2:
                    continue
                again = None
                if "requantised" in config.controls:
                    rows = read_rows(profiles_path(Path(out), name, length, kind, "requantised"))
                    again = rows[:n] if rows.ndim == 2 and rows.shape[0] >= n else None
                comparison = compare_pretraining(
                    pre[:n],
                    np.stack([t[:n] for t in twins]),
                    readout=readout,
                    seed=config.seed,
                    requantised=again,
                )
                found[f"{name}/L{length}/{kind}"] = comparison
                for suffix, labels in _variant_twins(config):
                    others = [
                        read_rows(profiles_path(Path(out), name, length, kind, m)) for m in labels
                    ]
                    m = min([pre.shape[0], *(r.shape[0] if r.ndim == 2 else 0 for r in others)])
                    if m >= 2:  # the same pretrained profiles against other twins
                        # quantised twins carry the file's error on both sides: no gate
                        gate = None if suffix == "quantised-twins" or again is None else again[:m]
                        found[f"{name}/L{length}/{kind}/{suffix}"] = compare_pretraining(
                            pre[:m],
                            np.stack([r[:m] for r in others]),
                            readout=readout,
                            seed=config.seed,
                            requantised=gate,
                        )
                if "global-twins" not in config.controls:
                    continue
                globals_ = [
                    read_rows(profiles_path(Path(out), name, length, kind, f"global{s}"))
                    for s in range(config.twins)
                ]
                m = min([n, *(g.shape[0] for g in globals_)])
                if m >= 2:  # the same change, against twins without the windows
                    found[f"{name}/L{length}/{kind}/global-twins"] = compare_pretraining(
                        pre[:m],
                        np.stack([g[:m] for g in globals_]),
                        readout=readout,
                        seed=config.seed,
                    )
    return found


def _variant_twins(config: StudyConfig) -> list[tuple[str, list[str]]]:
    """(cell suffix, twin labels) of each control that puts other twins against the same
    pretrained profiles (:data:`VARIANTS`); which initialiser ranges were measured is
    read from the files, so judging needs no model."""
    count = range(config.control_twins or config.twins)
    found = []
    if "twin-inits" in config.controls:
        for value in INIT_RANGE:
            suffix = f"{VARIANTS['twin-inits']}{value:g}"
            found.append((suffix, [f"init{value:g}-twin{s}" for s in count]))
    if "quantised-twins" in config.controls:
        found.append((VARIANTS["quantised-twins"], [f"qtwin{s}" for s in count]))
    return found


def variant_of(cell: str) -> str | None:
    """The suffix of a cell a control added beside another (``.../twins-init0.02``,
    ``.../quantised-twins``: :data:`VARIANTS`), None for a cell of its own.

    >>> variant_of("m/L512/records/twins-init0.08"), variant_of("m/L512/records")
    ('twins-init0.08', None)
    """
    last = cell.rsplit("/", 1)[-1]
    return last if last.startswith(tuple(VARIANTS.values())) else None


def study_facts(config: StudyConfig, out: Path) -> dict[str, dict[str, Any]]:
    """Each checkpoint's facts as its pretrained cells saved them (the first cell found):
    its content, whether it is at initialisation (:mod:`lostmid.models.untrained`), the
    twins' initialiser range and where it came from."""
    facts: dict[str, dict[str, Any]] = {}
    for name in config.checkpoints:
        for length in config.lengths:
            for kind in config.kinds:
                saved = read_cell(profiles_path(Path(out), name, length, kind, "pretrained"))[1]
                twin = read_cell(profiles_path(Path(out), name, length, kind, "twin0"))[1]
                if saved and name not in facts:
                    init = twin.get("twin_init") or twin.get("init_facts", {}).get(
                        "initializer_range", {}
                    )
                    untrained = saved.get("untrained") or {}
                    facts[name] = {
                        "untrained": untrained.get("untrained"),
                        "weights": untrained,
                        "sha256": saved.get("content_sha256") or saved.get("sha256"),
                        "twin_init": init,
                    }
    return facts


def comparison_table(found: dict[str, PretrainingComparison]) -> list[list[str]]:
    """Rows for a table: cell, log10 PtV pretrained / twins / difference, valley
    fraction, sink share, last share (pretrained vs twins), the two verdicts."""

    def fmt(e: Any, digits: int = 2) -> str:
        r = e.record()
        if r["value"] is None:
            return "-"
        if r["low"] is None:
            return f"{r['value']:.{digits}f}"
        return f"{r['value']:.{digits}f} [{r['low']:.{digits}f}, {r['high']:.{digits}f}]"

    rows = []
    for cell, c in found.items():
        rows.append(
            [
                cell,
                fmt(c.pretrained["log10_ptv"]),
                fmt(c.twins["log10_ptv"]),
                fmt(c.difference["log10_ptv"]),
                fmt(c.pretrained["valley_fraction"]),
                fmt(c.twins["valley_fraction"]),
                fmt(c.pretrained["sink_share"], 3),
                fmt(c.twins["sink_share"], 3),
                fmt(c.pretrained["last_share"], 3),
                fmt(c.twins["last_share"], 3),
                c.deepens.verdict,
                c.persists.verdict,
                c.middle.verdict,
            ]
        )
    return rows


TABLE_HEADER: Sequence[str] = (
    "cell",
    "log10 PtV pretrained",
    "log10 PtV twins",
    "difference",
    "valley frac. pretrained",
    "valley frac. twins",
    "sink share pretrained",
    "sink share twins",
    "last share pretrained",
    "last share twins",
    "deepens",
    "U persists",
    "valley in middle",
)


def read_study_config(folder: Path) -> StudyConfig:
    record = read_json_object(Path(folder) / STUDY_JSON, option="--checkpoints")
    known = {f.name for f in dataclasses.fields(StudyConfig) if f.init}
    unknown = sorted(set(record) - known)
    if unknown:
        shown = ", ".join(repr(k) for k in unknown[:5])
        raise UserError(
            f"--checkpoints {folder}: {STUDY_JSON} is not a study (unknown key(s) {shown}; "
            f"a study has {', '.join(sorted(known))})"
        )
    fields: dict[str, Any] = {}
    for key, value in record.items():
        fields[key] = tuple(value) if isinstance(value, list) else value
    try:
        return StudyConfig(**fields)
    except TypeError as err:
        raise UserError(f"--checkpoints {folder}: {STUDY_JSON} is not a study ({err})") from None


def check_study_folder(folder: Path) -> None:
    """One line unless ``folder`` holds a study with at least one cell whose pretrained
    model and every twin have profiles of 2 inputs or more (what a verdict needs); reads
    only the saved files."""
    config = read_study_config(folder)
    for name in config.checkpoints:
        for length in config.lengths:
            for kind in config.kinds:
                models = ["pretrained", *(f"twin{s}" for s in range(config.twins))]
                rows = [read_rows(profiles_path(folder, name, length, kind, m)) for m in models]
                if all(r.ndim == 2 and r.shape[0] >= 2 and r.shape[1] == length for r in rows):
                    return
    raise UserError(
        f"--checkpoints {folder}: no cell of the study has profiles of the pretrained model "
        "and every twin for 2 inputs or more; give a folder a study wrote "
        "(benchmarks/bench_checkpoints.py --study DIR)"
    )
