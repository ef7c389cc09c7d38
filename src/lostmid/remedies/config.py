"""The configuration of ``lostmid remedies``: checked on construction, light to import.

This module imports no torch: ``lostmid --help`` reads :data:`HELP` from it.

>>> RemediesConfig(remedies=("loss-weight",), quick=True).resolved_remedies()
('baseline', 'loss-weight')
>>> RemediesConfig(seeds=0)
Traceback (most recent call last):
...
lostmid.errors.UserError: --seeds must be positive, got 0
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from lostmid.behaviour.retrieve.config import check_lead_in
from lostmid.behaviour.tasks.registry import inference_tasks
from lostmid.behaviour.training.names import RETRIEVAL_PRESET_NAMES
from lostmid.checks import check_choice, check_positive, check_seed, seed_set
from lostmid.errors import UserError
from lostmid.models.spec import ANSWER_PREFIXES, CHAT_TEMPLATES, DTYPE_NAMES, LoadsModel

TRAINING_DEFAULT = (
    "baseline",
    "oversample",
    "oversample:rho",
    "oversample:adaptive",
    "oversample:middle-cover",
    "oversample:deficit",
    "curriculum",
    "curriculum-reverse",
    "loss-weight",
    "prefix",
    "residual",
    "residual:gate",
    "channels",
)
LAWS = ("tilt", "replace")
MODEL_DEFAULTS = {"device": "cpu", "dtype": "float32", "trust_remote_code": False}
"""How the inference remedies load ``--model`` (as ``lostmid retrieve``), by default."""
PRESETS = RETRIEVAL_PRESET_NAMES


@dataclass(frozen=True)
class RemediesScale:
    """A run size: the task (pairs, key characters, queries a row), optimiser steps,
    seeds, held-out examples per gold index, evaluation interval, influence budget, and
    the validation examples per gold index of the remedies that adapt to accuracy
    (:mod:`lostmid.remedies.validation`; disjoint from the held-out ones)."""

    pairs: int
    key_chars: int
    queries: int
    steps: int
    seeds: int
    eval_examples: int
    eval_every: int
    influence_samples: int
    influence_probes: int
    validation_examples: int = 64


# The preset: ``retrieval-valley`` (compact kv, 2-character keys, 4 queries a row, batch 16,
# gold indices drawn from beta:0.3 in training, so the first and last records are asked
# most, as in natural text; evaluated with gold uniform). Its valley comes from that data
# law, at a budget where the 2-layer model has learnt retrieval only partly (with gold
# uniform the same runs are flat). A remedy's gold law reweights beta:0.3 (--law tilt) or
# replaces it (--law replace); loss-weight and the architecture remedies keep it.
# Times and results of both scales: docs/BENCHMARKS.md (remedies).
REMEDIES_SCALES = {
    "quick": RemediesScale(
        pairs=6,
        key_chars=2,
        queries=4,
        steps=500,
        seeds=3,
        eval_examples=128,
        eval_every=100,
        influence_samples=4,
        influence_probes=2,
    ),
    "default": RemediesScale(
        pairs=8,
        key_chars=2,
        queries=4,
        steps=1200,
        seeds=3,
        eval_examples=256,
        eval_every=250,
        influence_samples=8,
        influence_probes=4,
    ),
}

HELP = {  # the CLI's help for each option, and the meaning of each field below
    "remedies": "Comma-separated remedies (NAME or NAME:ARG); baseline is always included. "
    "Default: every training-time remedy.",
    "preset": "Retrieval training preset: " + " | ".join(PRESETS) + ".",
    "steps": "Optimiser steps per run (default: the scale's).",
    "seeds": "Seeds per remedy (default: the scale's, 3): a count N (the seeds --seed .. "
    "--seed + N - 1), a range 0-4 or a list 0,2,5-7.",
    "quick": "The short scale (about 15-20 min on 2 quiet CPU cores).",
    "model": "Model for inference-time remedies (anything lostmid retrieve accepts).",
    "tokenizer": "Tokenizer for --model: a directory, cached hub id, or 'bytes' (default: "
    "the model's own).",
    "key_chars": "Key/value characters of the inference kv task (36: a UUID4, as Liu et al.).",
    "pairs": "Records per example (default: the scale's).",
    "alpha": "The theory's residual strength a in rho_H(x) (oversample:rho, loss-weight, "
    "theory predictions); default: measured, the mean over layers of the Jacobian a_l = "
    "s_l/(1+s_l) of the untrained model of the first seed.",
    "examples": "Held-out examples per gold position (default: the scale's).",
    "seed": "First seed; seed s of a remedy is seed + s.",
    "task": "Inference remedies: the retrieval task, " + " | ".join(inference_tasks()) + ".",
    "length": "Inference remedies on a needle task: prompt length in tokens (default 1024).",
    "distractors": "Inference remedies on a needle task: needles with other keys (default "
    "RULER's: 3 for niah-multikey).",
    "chat_template": "Inference remedies: auto (the model's chat template when it has one) | "
    "on | off, as lostmid retrieve.",
    "answer_prefix": "Inference remedies with a chat template: on (the answer prefix starts "
    "the assistant's turn, where a chat model answers) | off.",
    "lead_in": "Inference remedies: text the model writes before the answer, appended to "
    "the answer prefix (TEXT | learn: from a pilot of greedy replies), as lostmid retrieve.",
    "law": "How a remedy's gold law meets the training data's: tilt (reweight the data's "
    "law, p ∝ data x remedy) or replace (train on the remedy's law alone).",
    "device": "Inference remedies: cpu | cuda[:N] | auto, as lostmid retrieve.",
    "dtype": "Inference remedies: float32 | float64 | bfloat16 | float16.",
    "trust_remote_code": "Inference remedies: run code the model's config names (only code "
    "you have read).",
}


PANELS = {
    "Remedies": ("remedies", "alpha", "law"),
    "Training-time remedies (small models)": (
        "preset", "steps", "seeds", "quick", "pairs", "examples",
    ),
    "Inference remedies (a real model)": (
        "model", "tokenizer", "task", "key_chars", "length", "distractors", "chat_template",
        "answer_prefix", "lead_in", "trust_remote_code", "device", "dtype",
    ),
    "Run and output": ("seed",),
}  # fmt: skip
"""``lostmid remedies --help``'s groups of options."""


@dataclass(frozen=True)
class RemediesConfig(LoadsModel):
    """What to compare; every field is described in :data:`HELP` (the CLI's help)."""

    remedies: tuple[str, ...] = TRAINING_DEFAULT
    preset: str = "retrieval-valley"
    steps: int | None = None
    seeds: int | tuple[int, ...] | None = None
    quick: bool = False
    model: str | None = None
    tokenizer: str | None = None
    key_chars: int = 36
    pairs: int | None = None
    alpha: float | None = None
    examples: int | None = None
    seed: int = 0
    law: str = "tilt"
    task: str = "kv"
    length: int | None = None
    distractors: int | None = None
    chat_template: str = "auto"
    answer_prefix: str = "on"
    lead_in: str = ""
    device: str = "cpu"
    dtype: str = "float32"
    trust_remote_code: bool = False

    def __post_init__(self) -> None:
        check_seed(self.seed)
        from lostmid.remedies.registry import get_remedy

        object.__setattr__(self, "remedies", tuple(s.strip() for s in self.remedies if s.strip()))
        if not self.remedies:
            raise UserError("--remedies needs at least one remedy, e.g. baseline,loss-weight")
        check_choice("--preset", self.preset, PRESETS)
        for name in ("steps", "pairs", "examples", "key_chars"):
            value = getattr(self, name)
            if value is not None:
                check_positive(f"--{name.replace('_', '-')}", value)
        if self.seeds is not None and not isinstance(self.seeds, int):
            object.__setattr__(self, "seeds", tuple(self.seeds))
        self.resolved_seeds()  # the seeds' checks
        if self.alpha is not None and not 0.0 < self.alpha < 1.0:
            raise UserError(f"--alpha must be in (0, 1), got {self.alpha}")
        check_choice("--law", self.law, LAWS)
        check_choice("--task", self.task, inference_tasks())  # each task says
        if self.length is not None:
            check_positive("--length", self.length)
        if self.distractors is not None and self.distractors < 0:
            raise UserError(f"--distractors must be >= 0, got {self.distractors}")
        check_choice("--chat-template", self.chat_template, CHAT_TEMPLATES)
        check_choice("--dtype", self.dtype, DTYPE_NAMES)
        check_choice("--answer-prefix", self.answer_prefix, ANSWER_PREFIXES)
        check_lead_in(self.lead_in)
        kinds = {get_remedy(spec).kind for spec in self.remedies}  # checks every name
        if "inference" in kinds and self.model is None:
            raise UserError(
                "inference-time remedies need --model (a model lostmid retrieve accepts)"
            )
        if len(set(self.resolved_remedies())) != len(self.resolved_remedies()):
            raise UserError(f"--remedies lists a remedy twice: {','.join(self.remedies)}")

    @property
    def scale(self) -> RemediesScale:
        return REMEDIES_SCALES["quick" if self.quick else "default"]

    def resolved_remedies(self) -> tuple[str, ...]:
        """The remedies in order, ``baseline`` first (added when missing)."""
        rest = tuple(s for s in self.remedies if s != "baseline")
        return ("baseline", *rest)

    def resolved_seeds(self) -> tuple[int, ...]:
        """The seeds of every remedy (:func:`lostmid.checks.seed_set`)."""
        return seed_set(self.scale.seeds if self.seeds is None else self.seeds, self.seed)

    def record(self) -> dict[str, Any]:
        data = asdict(self)
        data["remedies"] = list(self.resolved_remedies())
        data["seeds"] = list(self.resolved_seeds())
        data["scale"] = asdict(self.scale)
        if not self.lead_in:  # runs saved before --lead-in existed resume as the same run
            del data["lead_in"]
        for name, default in MODEL_DEFAULTS.items():  # so do runs saved before these
            if data[name] == default:
                del data[name]
        return data
