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

from lostmid.behaviour.decoding.tokenizers import tokenizer_for_spec
from lostmid.compare.pretraining import PretrainingComparison, compare_pretraining
from lostmid.errors import UserError
from lostmid.files import read_json_object, write_text
from lostmid.influence import influence_profile
from lostmid.models import CHECKPOINTS
from lostmid.models.ablations import global_attention_overrides
from lostmid.models.load import resolve_config
from lostmid.models.quantise import requantise
from lostmid.models.spec import ModelSpec
from lostmid.pretrained.cells import profiles_path, read_cell, read_rows, rows_to_keep, write_rows
from lostmid.pretrained.inputs import INPUT_KINDS, INPUT_LABELS, input_ids

CONTROLS = ("requantised", "global-twins")
"""Models a study may add beside the pretrained one and its twins: ``requantised``, the
pretrained weights quantised once more (:mod:`lostmid.models.quantise`), the
quantisation control a cell's depth must clear; ``global-twins``, for a checkpoint with
sliding-window layers, twins whose every layer attends globally (``global0``..), so that
a change is judged with and without the windows' part (cells ``.../KIND/global-twins``)."""
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


@dataclass
class StudyProgress:
    """Lines of progress with elapsed time (to a terminal or a log file alike)."""

    say: Callable[[str], None] = print
    start: float = field(default_factory=time.perf_counter)

    def __call__(self, message: str) -> None:
        self.say(f"[{time.perf_counter() - self.start:7.0f} s] {message}")


def run_study(
    config: StudyConfig,
    out: Path,
    *,
    progress: Callable[[str], None] | None = None,
    specs: Mapping[str, ModelSpec] | None = None,
) -> dict[str, Any]:
    """Measure every cell of the design that is not on disk yet; return the comparisons.

    Resumable: each model's rows are written after every input, and rows already on
    disk (for the same inputs: the file records the design) are kept. ``specs``: how a
    checkpoint loads when not with the defaults (its tokenizer, dtype, remote code).
    """
    out = Path(out)
    say = StudyProgress(progress or print)
    write_text(out / "study.json", json.dumps(asdict(config), indent=1) + "\n")
    spec_of = {name: (specs or {}).get(name, ModelSpec(name)) for name in config.checkpoints}
    tokenizers = {name: tokenizer_for_spec(spec_of[name]) for name in config.checkpoints}
    # Each model is built once and measured on every input kind: a random twin of Gemma 3
    # took 6-10 s to build on one thread, 12 builds when the kinds were outermost.
    for name in config.checkpoints:
        tok = tokenizers[name]
        models = [("pretrained", "pretrained", 0)] + [
            (f"twin{s}", "random", s) for s in range(config.twins)
        ]
        models += [("requantised", "pretrained", 0)] if "requantised" in config.controls else []
        globalise = global_attention_overrides(
            resolve_config(name, trust_remote_code=spec_of[name].trust_remote_code)
        )
        if "global-twins" in config.controls and globalise is not None:
            models += [(f"global{s}", "random", s) for s in range(config.twins)]
        for label, init, seed in models:
            cells = [
                (kind, length, path, rows_to_keep(*read_cell(path), init))
                for length in config.lengths
                for kind in config.kinds
                for path in [profiles_path(out, name, length, kind, label)]
            ]
            left = [
                cell
                for cell in cells
                if not _complete(cell[3], config, cell[1])
                and not (cell[0] == "chat" and tok.chat_template is None)
            ]
            if not left:
                continue
            overrides = globalise if label.startswith("global") else None
            loaded = spec_of[name].load(init=init, seed=seed, config_overrides=overrides)
            changed = requantise(loaded.model) if label == "requantised" else None
            for kind, length, path, rows in left:
                loaded.check_length(length)
                ids = input_ids(kind, tok, loaded.vocab_size, config.inputs, length, config.seed)
                done = list(rows) if rows.ndim == 2 and rows.shape[1:] == (length,) else []
                facts = {
                    "checkpoint": name,
                    "model": label,
                    "init": init,
                    "seed": seed,
                    "length": length,
                    "kind": kind,
                    "probes": config.probes,
                    "sha256": (loaded.checkpoint or {}).get("sha256"),
                    "init_facts": (loaded.checkpoint or {}).get("init_facts", {}),
                    "requantised": changed,
                }
                for i in range(len(done), config.inputs):
                    t0 = time.perf_counter()
                    profile = influence_profile(
                        loaded, ids[i : i + 1], probes=config.probes, seed=config.seed + i
                    )
                    done.append(profile.influence)
                    write_rows(path, np.stack(done), facts)
                    say(
                        f"{name} L={length} {INPUT_LABELS[kind]}, {label}: input "
                        f"{i + 1}/{config.inputs} "
                        f"({time.perf_counter() - t0:.1f} s)"
                    )
            del loaded
    return study_comparisons(config, out)


def _complete(rows: np.ndarray, config: StudyConfig, length: int) -> bool:
    """Whether a cell's saved rows hold every input at this length."""
    return bool(rows.ndim == 2 and rows.shape[0] >= config.inputs and rows.shape[1] == length)


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
