"""Real checkpoints against their twins at birth: does pretraining deepen the valley?

For each registry checkpoint (``smollm2-135m``, ``gemma3-270m``) and each length L, the
pretrained model and S random-init twins (``--init random``, seeds 0..S-1) are measured
on the same N inputs of three kinds:

* ``random``: token ids drawn uniformly from the vocabulary (today's ``measure``);
* ``text``: windows of English prose, the documentation topics that ship with Python
  (``pydoc_data.topics``), tokenized by the model's own tokenizer;
* ``records``: Liu et al.'s key-value prompts (UUID records in a JSON object, then the
  question), as many records as fill L tokens;
* ``chat``: the same prose as the user's turn of the model's own chat template, up to the
  assistant's turn (an instruct model as it is used); only for a model with a template.

Every input but ``chat`` starts with the tokens the tokenizer itself adds before a text
(Gemma's ``<bos>``; nothing for SmolLM2), as the model saw in training; a chat input
starts as its template does. One influence profile
per input (the Jacobian norm of the final hidden state at position L with respect to
each input embedding, ``measure``'s definition, ``probes`` Rademacher probes) is saved
as it is computed (``OUT/profiles/<family>/L<L>/<kind>/<model>.npz``, a row an input),
so a killed study resumes where it stopped; :func:`study_comparisons` reads them back and judges
with :func:`lostmid.compare.pretraining.compare_pretraining`.
"""

from __future__ import annotations

import dataclasses
import io
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

from lostmid.behaviour.decoding.tokenizers import Tokenizer, tokenizer_for_spec
from lostmid.behaviour.tasks.kv import format_kv_records, kv_records
from lostmid.compare.pretraining import PretrainingComparison, compare_pretraining
from lostmid.errors import UserError
from lostmid.files import write_bytes, write_text
from lostmid.influence import influence_profile
from lostmid.models import CHECKPOINTS
from lostmid.models.ablations import global_attention_overrides
from lostmid.models.load import check_trained_model, resolve_config
from lostmid.models.quantise import requantise
from lostmid.models.spec import ModelSpec, model_slug
from lostmid.reproduce.plan import REAL_CHECKPOINT_PRIORITY, PlannedStage, StandardSection

INPUT_KINDS = ("random", "text", "records", "chat")
CHAT_BODY = "\x00lostmid-body\x00"  # where the prose goes in a rendered chat template
CONTROLS = ("requantised", "global-twins")
"""Models a study may add beside the pretrained one and its twins: ``requantised``, the
pretrained weights quantised once more (:mod:`lostmid.models.quantise`), the
quantisation control a cell's depth must clear; ``global-twins``, for a checkpoint with
sliding-window layers, twins whose every layer attends globally (``global0``..), so that
a change is judged with and without the windows' part (cells ``.../KIND/global-twins``)."""
KV_HEAD = (
    "Extract the value corresponding to the specified key in the JSON object below.\n\nJSON data:\n"
)
KV_TAIL = '\n\nKey: "{key}"\nCorresponding value:'


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


def prose_text() -> str:
    """English prose that ships with Python: the documentation topics of ``pydoc``."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


def prefix_tokens(tok: Tokenizer) -> list[int]:
    """The tokens the tokenizer itself puts before a text (Gemma's ``<bos>``; none for
    SmolLM2, whose ``bos_token`` is a chat marker it does not add)."""
    plain, special = tok.encode("a"), tok.encode("a", special=True)
    cut = len(special) - len(plain)
    return special[:cut] if cut > 0 and special[cut:] == plain else []


def input_ids(
    kind: str, tok: Tokenizer, vocab: int, count: int, length: int, seed: int
) -> torch.Tensor:
    """(count, length) token ids of one input kind (see the module docstring)."""
    prefix = prefix_tokens(tok)
    body = length - len(prefix)
    rows: list[list[int]] = []
    if kind == "random":
        gen = torch.Generator().manual_seed(seed)
        draws = torch.randint(0, vocab, (count, body), generator=gen)
        rows = [prefix + r.tolist() for r in draws]
    elif kind == "text":
        stream = tok.encode(prose_text())
        if len(stream) < body + 1:
            raise UserError(f"the prose corpus has {len(stream)} tokens, fewer than {body}")
        rng = np.random.default_rng(seed)
        starts = rng.integers(0, len(stream) - body, count)
        rows = [prefix + stream[int(s) : int(s) + body] for s in starts]
    elif kind == "chat":
        if tok.chat_template is None:
            raise UserError(f"{tok.name}: no chat template, so no chat-formatted inputs")
        head_text, _, tail_text = tok.render_chat(CHAT_BODY).partition(CHAT_BODY)
        head, tail = tok.encode(head_text), tok.encode(tail_text)
        inside = length - len(head) - len(tail)
        stream = tok.encode(prose_text())
        if inside < 1 or len(stream) < inside + 1:
            raise UserError(f"L = {length} is too short for a chat-formatted input")
        rng = np.random.default_rng(seed)
        starts = rng.integers(0, len(stream) - inside, count)
        rows = [head + stream[int(s) : int(s) + inside] + tail for s in starts]
    elif kind == "records":
        for index in range(count):
            pairs = kv_records(seed, index, max(2, body // 20), 36)  # ~25 tokens a record
            text, spans = format_kv_records(pairs)
            head = tok.encode(KV_HEAD + text)
            slack = 32  # room for a longer key in the question than the first one's
            keep = body - len(tok.encode(KV_TAIL.format(key=pairs[0][0]))) - slack
            if keep <= len(tok.encode(KV_HEAD)) or len(head) < body:
                raise UserError(f"L = {length} is too short for a key-value records prompt")
            kept_chars = len(tok.decode(head[:keep])) - len(KV_HEAD)
            complete = [i for i, (_, end) in enumerate(spans) if end <= kept_chars]
            if not complete:
                raise UserError(f"L = {length} is too short for a key-value records prompt")
            key = pairs[random.Random(seed * 7919 + index).choice(complete)][0]
            tail = tok.encode(KV_TAIL.format(key=key))
            rows.append(prefix + head[: body - len(tail)] + tail)
    else:
        raise UserError(f"unknown input kind {kind!r}")
    ids = torch.tensor(rows, dtype=torch.long)
    if ids.shape != (count, length):  # pragma: no cover - a bug, not an input
        raise AssertionError(f"inputs of shape {tuple(ids.shape)}, expected {(count, length)}")
    return ids


def _profiles_path(out: Path, checkpoint: str, length: int, kind: str, model: str) -> Path:
    """Where a cell's profiles are: a registry name as is, any other spec (a folder, a
    .gguf file) as its file-name slug."""
    return out / "profiles" / model_slug(checkpoint) / f"L{length}" / kind / f"{model}.npz"


def _read_rows(path: Path) -> np.ndarray:
    return _read_cell(path)[0]


def _read_cell(path: Path) -> tuple[np.ndarray, dict[str, Any]]:
    """A cell's saved rows (one influence profile an input) and the facts saved with them."""
    if not path.is_file():
        return np.zeros((0, 0)), {}
    try:
        with np.load(path) as data:
            rows = np.asarray(data["profiles"], dtype=np.float64)
            facts = json.loads(str(data["facts"])) if "facts" in data else {}
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return np.zeros((0, 0)), {}  # damaged: recomputed
    return rows, facts if isinstance(facts, dict) else {}


def _write_rows(path: Path, rows: np.ndarray, facts: dict[str, Any]) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, profiles=rows, facts=json.dumps(facts))
    write_bytes(path, buffer.getvalue())


def _rows_to_keep(rows: np.ndarray, facts: dict[str, Any], init: str) -> np.ndarray:
    """Saved rows a resumed study keeps: a twin's only when its facts say which init facts
    built it (twins saved before the published initialiser range was read are rebuilt)."""
    if init == "random" and "init_facts" not in facts:
        return np.zeros((0, 0))
    return rows


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
                (kind, length, path, _rows_to_keep(*_read_cell(path), init))
                for length in config.lengths
                for kind in config.kinds
                for path in [_profiles_path(out, name, length, kind, label)]
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
                    _write_rows(path, np.stack(done), facts)
                    say(
                        f"{name} L={length} {kind} {label}: input {i + 1}/{config.inputs} "
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
                pre = _read_rows(_profiles_path(Path(out), name, length, kind, "pretrained"))
                twins = [
                    _read_rows(_profiles_path(Path(out), name, length, kind, f"twin{s}"))
                    for s in range(config.twins)
                ]
                n = min([pre.shape[0], *(t.shape[0] for t in twins)])
                if n < 2:
                    continue
                again = None
                if "requantised" in config.controls:
                    rows = _read_rows(_profiles_path(Path(out), name, length, kind, "requantised"))
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
                    _read_rows(_profiles_path(Path(out), name, length, kind, f"global{s}"))
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


# -- the reproduce section -----------------------------------------------------------------

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
        controls=("requantised",),
    ),
    "full": StudyConfig(
        lengths=(512, 2048), inputs=16, twins=3, probes=1, controls=("requantised",)
    ),
}
"""The section's scales. ``quick``: SmolLM2 only, L = 128, random and text inputs, 3
inputs, 2 twins (about a minute once the checkpoint is cached). ``default``: both
checkpoints, L = 512, random, text and records, 4 inputs, 2 twins and the quantisation
control (about 20 CPU-minutes; its intervals are wide: 16 inputs give 0.28-0.53 decade on
the change, docs/BENCHMARKS.md). ``full``: L = 512 and 2048, every kind, 16 inputs, 3
twins and the control (hours). A folder holding ``study.json`` (a finished
:func:`run_study`, e.g. ``benchmarks/bench_checkpoints.py``) is read back."""
STUDY_JSON = "study.json"
DEEPEN_CLAIM = "Pretraining deepens the valley"
DEEPEN_PAPER = "log10 peak-to-valley about 2 at initialisation, about 3 after pretraining"
PERSIST_CLAIM = "The U persists through pretraining"
PERSIST_PAPER = "training does not overcome the valley: the U is still there, as deep"
MIDDLE_CLAIM = "A pretrained model's valley is in the middle"
MIDDLE_PAPER = "the dead zone: the middle of the context"


def read_study_config(folder: Path) -> StudyConfig:
    from lostmid.files import read_json_object

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
                rows = [_read_rows(_profiles_path(folder, name, length, kind, m)) for m in models]
                if all(r.ndim == 2 and r.shape[0] >= 2 and r.shape[1] == length for r in rows):
                    return
    raise UserError(
        f"--checkpoints {folder}: no cell of the study has profiles of the pretrained model "
        "and every twin for 2 inputs or more; give a folder a study wrote "
        "(benchmarks/bench_checkpoints.py --study DIR)"
    )


def scale_study(scale: str, models: Sequence[str] = ()) -> StudyConfig:
    """The study of a scale, on ``models`` when given (else the scale's checkpoints).

    >>> scale_study("quick", ("./my-model",)).checkpoints
    ('./my-model',)
    """
    config = CHECKPOINT_SCALES[scale]
    return replace(config, checkpoints=tuple(models)) if models else config


def checkpoint_stage(
    scale: str, folder: Path, models: Sequence[str] = (), specs: Sequence[ModelSpec] = ()
) -> dict[str, Any]:
    """Run (or resume) the study of ``scale`` (on ``models`` when given, loaded as their
    ``specs`` say) in ``folder``; the comparisons' records."""
    found = run_study(scale_study(scale, models), folder, specs={s.name: s for s in specs})
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

    @classmethod
    def of(
        cls, value: str, results: Mapping[str, Any], out: Path, models: Sequence[str] = ()
    ) -> CheckpointSection | None:
        """Judged from the study's folder (its saved profiles): a scale's (on ``models``
        when given), once its stage has finished, or a finished study's folder."""
        if value == "off":
            return None
        if value in CHECKPOINT_SCALES:
            if results.get(f"checkpoints-{value}") is None:
                return None
            folder, config = out / "checkpoints", scale_study(value, models)
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
        )

    @property
    def claims(self) -> tuple[Any, ...]:
        from lostmid.compare.claims import Claim

        claims = []
        for cell, c in self.cells.items():
            d, p = c["difference"]["log10_ptv"], c["pretrained"]
            design = f"{cell}: {c['inputs']} inputs, {c['seeds']} twins, {c['readout']} readout"
            ours = (
                f"{design}; log10 PtV {_fmt(p['log10_ptv'])} vs twins "
                f"{_fmt(c['twins']['log10_ptv'])}, change {_fmt(d)}; quantised once more: "
                f"{_quantisation(c)}"
            )
            shape = (
                f"{ours}; log10 first / valley {_fmt(p['log10_sink_depth'])}, last / valley "
                f"{_fmt(p['log10_last_depth'])}"
            )
            where = (
                f"{design}; valley at {_fmt(p['valley_fraction'])} of the context "
                f"(twins {_fmt(c['twins']['valley_fraction'])})"
            )
            for claim, paper, text, key in (
                (DEEPEN_CLAIM, DEEPEN_PAPER, ours, "deepens"),
                (PERSIST_CLAIM, PERSIST_PAPER, shape, "persists"),
                (MIDDLE_CLAIM, MIDDLE_PAPER, where, "middle"),
            ):
                claims.append(Claim(claim, paper, text, c[key]["verdict"], c[key]["rule"]))
        return tuple(claims)

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
        return (
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
        return [
            PlannedStage(
                f"checkpoints-{scale}",
                {"scale": scale, "seed": 0, "record": 2} | models | options,
                partial(checkpoint_stage, scale, out / "checkpoints", config.trained, specs),
                dict,
                priority=REAL_CHECKPOINT_PRIORITY,
            )
        ]

    def collect(
        self, config: Any, results: Mapping[str, Any], out: Path
    ) -> CheckpointSection | None:
        return CheckpointSection.of(config.scale.checkpoints, results, out, config.trained)

    def figures(self, value: CheckpointSection, folder: Path) -> dict[str, Path]:
        return {"checkpoints": value.figure(folder)}


SECTION = CheckpointsPlugin()


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


def plot_study(folder: Path, config: StudyConfig) -> Any:
    """One panel per checkpoint and length, one colour per input kind: the pretrained
    model's mean profile (solid) and the twins' (dashed), each divided by its sum,
    against the position as a fraction of the context, on a log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(n, length) for n in config.checkpoints for length in config.lengths]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False, constrained_layout=True
    )
    colours = dict(
        zip(INPUT_KINDS, ("tab:blue", "tab:orange", "tab:green", "tab:red"), strict=True)
    )
    for ax, (name, length) in zip(axes[0], panels, strict=True):
        x = np.arange(length) / max(length - 1, 1)
        for kind in config.kinds:
            pre = _read_rows(_profiles_path(folder, name, length, kind, "pretrained"))
            if pre.shape[0] == 0:
                continue
            mean = pre.mean(axis=0)
            ax.plot(x, mean / mean.sum(), color=colours[kind], lw=1.2, label=f"{kind} pretrained")
            twins = [
                _read_rows(_profiles_path(folder, name, length, kind, f"twin{s}"))
                for s in range(config.twins)
            ]
            twins = [t for t in twins if t.shape[0]]
            if twins:
                tw = np.mean([t.mean(axis=0) / t.mean(axis=0).sum() for t in twins], axis=0)
                ax.plot(x, tw, color=colours[kind], lw=1, ls="--", label=f"{kind} twins")
        ax.set_yscale("log")
        ax.set_title(f"{name}, L = {length}")
        ax.set_xlabel("position j / L")
        ax.set_ylabel("influence share")
        ax.legend(fontsize=7)
    return fig
