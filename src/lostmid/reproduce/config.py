"""What one ``lostmid reproduce`` run is: its scale, models, seed and device.

A :class:`ReproduceConfig` is checked when it is made (one-line
:class:`~lostmid.errors.UserError`), so the stages can trust it.

>>> config = ReproduceConfig.at_scale("quick", models=("tiny-gpt2",), seeds=2)
>>> config.scale.length, config.seeds()
(128, [0, 1])
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from lostmid.behaviour.training.names import RETRIEVAL_PRESET_NAMES
from lostmid.checks import check_choice, check_positive, check_seed, seed_set
from lostmid.errors import UserError
from lostmid.models.spec import ModelSpec
from lostmid.remedies.config import LAWS, REMEDIES_SCALES
from lostmid.train.config import TRAIN_PRESETS

DEFAULT_MODELS = ("qwen2-0.5b", "gpt2")
BEHAVIOUR_PRESETS = RETRIEVAL_PRESET_NAMES
"""Retrieval presets (:data:`lostmid.behaviour.RETRIEVAL_PRESETS`, by the names of
:mod:`lostmid.behaviour.training.names`, so that this module stays free of torch)."""

SECTION_SCALES = ("quick", "default", "full", "off")
"""The scales of a section (``off`` skips it), named here so that this module stays free
of torch: the dose-response's (:data:`lostmid.reproduce.dose.DOSE_SCALES`), the real
checkpoints' (:data:`lostmid.reproduce.checkpoints.CHECKPOINT_SCALES`) and their
behaviour's (:data:`lostmid.reproduce.real_behaviour.REAL_SCALES`)."""
DOSE_CHOICES = CHECKPOINT_CHOICES = REAL_CHOICES = SECTION_SCALES
REAL_REMEDY_CHOICES = REAL_LINK_CHOICES = ("quick", "default", "off")
"""The scales of the inference remedies on real checkpoints
(:data:`lostmid.reproduce.real_remedies.REAL_REMEDY_SCALES`) and of their structure-
behaviour link (:data:`lostmid.reproduce.real_link.LINK_SCALES`), and off."""


@dataclass(frozen=True)
class SectionOption:
    """The ``lostmid reproduce`` option of a section that has scales of its own: a
    :class:`Scale` field of that name (a scale, ``off``, or a folder holding a finished
    run of the section), its choices, the files that mark a finished run in a folder
    (globs, tried in order) and its help. Each is checked, overridable on the command
    line and documented from its entry in :data:`SECTION_OPTIONS` alone.

    >>> SectionOption("dose", ("quick", "off"), ("dose.json",), "a sweep", "").check("quick")
    'quick'
    """

    field: str
    choices: tuple[str, ...]
    saved: tuple[str, ...]
    what: str
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.field.replace("_", "-")

    def check(self, value: str) -> str:
        """``value`` when it is a choice or a folder with a finished run; else one line
        naming the option, the choices and what a finished run is."""
        if value in self.choices:
            return value
        if any(any(Path(value).glob(g)) for g in self.saved):
            return value
        raise UserError(
            f"{self.flag} {value}: not {', '.join(self.choices)} or a folder with "
            f"{self.saved[-1]} ({self.what})"
        )


SECTION_OPTIONS = (
    SectionOption(
        "dose",
        DOSE_CHOICES,
        ("dose.json",),
        "a finished lostmid sweep --task train-retrieval --out",
        "The depth dose-response section: quick | default | full | off, or DIR (a finished sweep).",
    ),
    SectionOption(
        "checkpoints",
        CHECKPOINT_CHOICES,
        ("study.json",),
        "a finished checkpoint study, benchmarks/bench_checkpoints.py",
        "Profiles of the trained models against their random-init twins: quick | default "
        "| full | off, or DIR (a finished study).",
    ),
    SectionOption(
        "real_behaviour",
        REAL_CHOICES,
        ("*/retrieve.json",),
        "a finished run of this section: OUT/real-behaviour/SCALE",
        "Trained models' accuracy by needle depth: quick | default | full | off, or DIR "
        "(a finished run of the section).",
    ),
    SectionOption(
        "real_remedies",
        REAL_REMEDY_CHOICES,
        ("remedies.json", "*/remedies.json"),
        "a finished lostmid remedies --model run, or OUT/real-remedies/SCALE",
        "Inference remedies on the trained models: quick | default | off, or DIR "
        "(finished lostmid remedies runs).",
    ),
    SectionOption(
        "real_link",
        REAL_LINK_CHOICES,
        ("link.json", "*/link.json"),
        "a finished run of this section: OUT/real-link/SCALE",
        "Influence and accuracy on the same prompts, trained models and twins: quick | "
        "default | off, or DIR.",
    ),
)
"""The sections with scales of their own, in the order of their options. A new one is a
:class:`Scale` field (its value at each scale) and one entry here."""


HELP = {  # the help of each ``lostmid reproduce`` option, and what it sets here
    "quick": "The smoke run: every section at its smallest (about 4 min on 2 cores).",
    "full": "The paper's scale (L = 2048): a GPU or patience.",
    "models": "Comma-separated model specs (presets, directories, hub ids).",
    "length": "Override the scale's length L.",
    "seeds": "Override the seeds (independent models per architecture): a count N (the "
    "seeds --seed .. --seed + N - 1), a range 0-4 or a list 0,2,5-7.",
    "samples": "Override the random-token inputs per seed.",
    "probes": "Override the probe vectors per input.",
    "train_steps": "Training steps (0 skips the training section).",
    "train_preset": "Training preset (default: tiny; small for --full).",
    "train_seeds": "Independent training runs behind the training claims: a count N (the "
    "seeds --seed .. --seed + N - 1), a range 0-4 or a list 0,2,5-7.",
    "behaviour_preset": "Retrieval preset of the behavioural section (lostmid train --task kv).",
    "behaviour_steps": "Retrieval training steps (default: the scale's; 0 skips the section).",
    "behaviour_seeds": "Independent retrieval runs behind the behavioural claim (a count, a "
    "range or a list, as --seeds).",
    "device": "auto (cuda if available) | cpu | cuda[:N], for measurement.",
    "remedies": "Add the training remedies: quick | default, or DIR (a finished lostmid "
    "remedies --out).",
    "trained": "Models of the trained-model sections (default: the two registry "
    "checkpoints), comma-separated.",
    "chat_template": "How the trained models are prompted: auto | on | off.",
    "answer_prefix": "on: the answer starts inside the prompt | off: the prompt asks and stops.",
    "tokenizer": "Tokenizer of the trained models when not their own: a directory, a "
    "cached hub id or bytes.",
    "dtype": "dtype the trained models run in: float32 | float64 | bfloat16 | float16.",
    "trust_remote_code": "Run the custom code a trained model's config names (auto_map).",
    "twin_init_std": "Initialiser range (std) of the random-init twins of the trained "
    "models when their files do not say it (default: the registry's published value, the "
    "model's config, else 0.02); the range 0.02 / 0.08 is read beside it where the "
    "section measures it.",
    "seed": "First seed: model i uses seed + i, training run i too.",
    "overwrite": "Recompute every stage instead of resuming.",
} | {option.field: option.help for option in SECTION_OPTIONS}


@dataclass(frozen=True)
class Scale:
    """How big a reproduce run is.

    Attributes:
        name: the scale the run started from (``quick``, ``default``, ``full``).
        length: L, the tokens per input.
        seeds: independently initialised models per architecture.
        samples: random-token inputs per seed.
        probes: random probe vectors per input.
        train_steps: training steps; None: the preset's default; 0: no training section.
        train_preset: the training preset (``lostmid train --preset``).
        train_seeds: independent training runs (seeds ``seed``, ``seed + 1``, ...).
        behaviour_preset: the retrieval preset of the behavioural section.
        behaviour_steps: its training steps; None: the preset's; 0: no behavioural section.
        behaviour_seeds: independent retrieval runs.
        dose: the depth dose-response section's scale (``quick``, ``default``, ``full``),
            ``off``, or a folder with a finished design's ``dose.json``
            (:mod:`lostmid.reproduce.dose`).
        vocab_size: vocabulary of the untrained models (None: the family's own). Only
            the blocks matter for the hidden-state Jacobian; inputs are random ids.
        depth_points: per-layer profiles at about this many layers (None: all) on the
            first seed; layer 1 is measured on every seed (the depth-1 check).
        off_samples: inputs measured again without the positional encoding (the first
            ones). The profile is measured in two parts, these inputs and the rest, whose
            disagreement is the sampling noise (the noise floor's own part).
        gain_samples: inputs for the branch gains (the first ones of the profile's
            inputs; at most ``samples`` are used). The gains are an average over d
            directions and L positions, so far fewer inputs settle them than the profile.
        gain_directions: random directions per input of the branch gains.
        batch_size: inputs per forward pass of the profile (more is faster on a GPU).
    """

    name: str
    length: int
    seeds: int | tuple[int, ...]
    samples: int
    probes: int
    train_steps: int | None
    train_preset: str = "tiny"
    train_seeds: int | tuple[int, ...] = 3
    behaviour_preset: str = "retrieval-valley"
    behaviour_steps: int | None = None
    behaviour_seeds: int | tuple[int, ...] = 3
    dose: str = "default"  # the dose-response section's scale (reproduce.dose.DOSE_SCALES)
    checkpoints: str = "default"  # the real-checkpoint section (reproduce.checkpoints)
    real_behaviour: str = "default"  # its behaviour (reproduce.real_behaviour)
    real_remedies: str = "off"  # inference remedies on them (reproduce.real_remedies)
    real_link: str = "off"  # their influence against their behaviour (reproduce.real_link)
    vocab_size: int | None = 512
    depth_points: int | None = 6
    off_samples: int = 1
    gain_samples: int = 1
    gain_directions: int = 1
    batch_size: int = 1

    def __post_init__(self) -> None:
        for name in ("length", "samples", "probes", "off_samples", "gain_samples"):
            check_positive(f"--{name.replace('_', '-')}", getattr(self, name))
        check_positive("--gain-directions", self.gain_directions)
        for name in ("seeds", "train_seeds", "behaviour_seeds"):  # a count or the seeds
            value = getattr(self, name)
            if not isinstance(value, int):
                object.__setattr__(self, name, tuple(value))
            seed_set(getattr(self, name), 0, f"--{name.replace('_', '-')}")
        if self.train_steps not in (None, 0):  # 0 is allowed: it skips training
            check_positive("--train-steps", self.train_steps)
        if self.behaviour_steps not in (None, 0):
            check_positive("--behaviour-steps", self.behaviour_steps)
        check_choice("--train-preset", self.train_preset, TRAIN_PRESETS)
        check_choice("--behaviour-preset", self.behaviour_preset, BEHAVIOUR_PRESETS)
        for option in SECTION_OPTIONS:  # dose-response, real checkpoints and their sections
            option.check(getattr(self, option.field))
        check_positive("batch size", self.batch_size)

    @property
    def first_part(self) -> int:
        """The inputs of the profile's first part, also measured without positional
        encoding: ``off_samples``, at most half of ``samples`` (at least 1).

        >>> SCALES["default"].first_part, replace(SCALES["default"], samples=1).first_part
        (1, 1)
        """
        return max(1, min(self.off_samples, self.samples // 2))

    @property
    def gain_inputs(self) -> int:
        """The inputs the branch gains are measured on: ``min(gain_samples, samples)``."""
        return min(self.gain_samples, self.samples)


SCALES = {
    "quick": Scale(
        "quick",
        length=128,
        seeds=3,
        samples=4,
        probes=1,
        train_steps=100,
        train_seeds=2,  # the smoke run: fewer runs and steps (4 min on 2 cores)
        behaviour_seeds=2,
        behaviour_steps=600,
        depth_points=4,
        dose="quick",
        checkpoints="quick",
        real_behaviour="quick",
    ),
    "default": Scale(
        "default",
        length=512,
        seeds=3,
        samples=4,
        probes=1,
        train_steps=300,
        depth_points=4,
    ),
    "full": Scale(
        "full",
        length=2048,
        seeds=5,
        samples=32,
        probes=1,
        train_steps=None,
        train_preset="small",
        vocab_size=None,
        depth_points=None,
        off_samples=8,
        gain_samples=4,
        batch_size=8,
        dose="full",
        checkpoints="full",
        real_behaviour="full",
        real_link="default",
    ),
}
"""The named scales. Why they are what they are (the timings behind each choice are in
docs/BENCHMARKS.md, "reproduce"):

* Every input gets ONE probe: a probe's variance is small against the variance between
  inputs (d-dimensional outputs), so inputs, not probes, set the noise floor.
* ``default`` keeps its 10-minute budget on 2 CPU cores by trading: one probe per input,
  only the first input measured again without positional encoding, the branch gains on
  one input and one direction, and the depth-growth stage at 4 layers (layer 1 is
  measured on every seed for the depth-1 check; it costs one block).
* The W1 floor between seeds does not fall like 1/sqrt(inputs) forever: independently
  initialised models differ by a model-to-model part that no budget removes (measured
  per model in the report's noise-floor section); ``full`` spends the inputs that bring
  Qwen2's sampling part down.
* Training: every training claim and the behavioural claim pool 3 seeds; the default
  trains 3 x 300 steps of ``tiny`` (quick: 3 x 100) and, at every scale, 3 runs of the
  ``retrieval-valley`` preset, the smallest setting found whose trained models show a
  behavioural valley.
* ``full``: the paper's L = 2048 on a GPU (8 inputs per forward pass), every layer's
  profile on the first seed, gains on 4 inputs.
"""


@dataclass(frozen=True)
class ReproduceConfig:
    """The resolved configuration of one reproduce run (options: :data:`HELP`).

    Attributes:
        scale: the resolved :class:`Scale` (a named scale with the user's overrides).
        models: model specs (presets, directories or hub ids), at least one.
        seed: the first seed; seed i of a model (and of a training run) is ``seed + i``.
        device: ``auto`` (cuda when torch sees a GPU, else cpu), ``cpu`` or ``cuda[:N]``
            for the measurement stages.
        remedies: None (no remedies section), ``quick`` or ``default`` (run ``lostmid
            remedies`` at that scale as a stage), or the folder of a finished run.
    """

    scale: Scale = SCALES["default"]
    models: tuple[str, ...] = DEFAULT_MODELS
    seed: int = 0
    device: str = "auto"
    remedies: str | None = None
    trained: tuple[str, ...] = ()
    chat_template: str = "auto"
    answer_prefix: str = "on"
    tokenizer: str | None = None
    dtype: str = "float32"
    trust_remote_code: bool = False
    twin_init_std: float | None = None

    def __post_init__(self) -> None:
        check_seed(self.seed)
        if self.twin_init_std is not None and not 0 < self.twin_init_std < 1:
            raise UserError(
                f"--twin-init-std {self.twin_init_std}: the twins' initialiser range is a "
                "standard deviation in (0, 1), e.g. 0.02"
            )
        self.seeds(), self.train_seeds(), self.behaviour_seeds()  # the seeds from --seed
        object.__setattr__(self, "models", tuple(self.models))
        object.__setattr__(self, "trained", tuple(self.trained))
        self.trained_spec("-")  # the prompt and load options, checked now
        if not self.models and not self.trained:
            raise UserError("--models is empty; give at least one model spec")
        if self.remedies is not None and self.remedies not in REMEDIES_SCALES:
            path = Path(self.remedies)
            if not any((f / "remedies.json").is_file() for f in (path, *(path / a for a in LAWS))):
                raise UserError(
                    f"--remedies {self.remedies}: not quick, default or a folder with "
                    "remedies.json (a finished lostmid remedies --out, or tilt/ and replace/ "
                    "holding one each)"
                )

    @classmethod
    def at_scale(
        cls,
        name: str = "default",
        *,
        models: tuple[str, ...] = DEFAULT_MODELS,
        seed: int = 0,
        device: str = "auto",
        remedies: str | None = None,
        trained: tuple[str, ...] = (),
        chat_template: str = "auto",
        answer_prefix: str = "on",
        tokenizer: str | None = None,
        dtype: str = "float32",
        trust_remote_code: bool = False,
        twin_init_std: float | None = None,
        **overrides: Any,
    ) -> ReproduceConfig:
        """The named scale with the fields of :class:`Scale` in ``overrides`` that are
        not None replacing its own (``length``, ``seeds``, ``train_steps``, ...)."""
        check_choice("scale", name, SCALES)
        scale = replace(SCALES[name], **{k: v for k, v in overrides.items() if v is not None})
        return cls(
            scale=scale,
            models=tuple(models),
            seed=seed,
            device=device,
            remedies=remedies,
            trained=tuple(trained),
            chat_template=chat_template,
            answer_prefix=answer_prefix,
            tokenizer=tokenizer,
            dtype=dtype,
            trust_remote_code=trust_remote_code,
            twin_init_std=twin_init_std,
        )

    def seeds(self) -> list[int]:
        """The seeds of every model (:func:`lostmid.checks.seed_set`: a count N is
        ``seed .. seed + N - 1``)."""
        return list(seed_set(self.scale.seeds, self.seed))

    def train_seeds(self) -> list[int]:
        """The seeds of the training runs (as :meth:`seeds`)."""
        return list(seed_set(self.scale.train_seeds, self.seed, "--train-seeds"))

    def behaviour_seeds(self) -> list[int]:
        """The seeds of the retrieval runs (as :meth:`seeds`)."""
        return list(seed_set(self.scale.behaviour_seeds, self.seed, "--behaviour-seeds"))

    def trained_specs(self, default: tuple[str, ...]) -> tuple[ModelSpec, ...]:
        """The models of the trained-model sections: ``--trained`` when given, else the
        section's own ``default`` (its scale's registry checkpoints), each with the run's
        prompt format and load options (:class:`~lostmid.models.spec.ModelSpec`)."""
        return tuple(self.trained_spec(name) for name in (self.trained or default))

    def trained_spec(self, name: str) -> ModelSpec:
        """``name`` with the run's prompt format and load options."""
        return ModelSpec(
            name,
            self.chat_template,
            self.answer_prefix,
            tokenizer=self.tokenizer,
            dtype=self.dtype,
            trust_remote_code=self.trust_remote_code,
        )

    def record(self) -> dict[str, Any]:
        record = {
            "scale": asdict(self.scale),
            "models": list(self.models),
            "seed": self.seed,
            "device": self.device,
            "remedies": self.remedies,
        }
        # only when set, so that a folder written before these options resumes
        trained: dict[str, Any] = {"trained": list(self.trained)} if self.trained else {}
        if self.twin_init_std is not None:
            trained["twin_init_std"] = self.twin_init_std
        return record | trained | self.trained_spec("-").options()


def parse_models(text: str) -> tuple[str, ...]:
    """Comma-separated model specs, blanks dropped.

    >>> parse_models("tiny-gpt2, ./my-model ,")
    ('tiny-gpt2', './my-model')
    """
    return tuple(m.strip() for m in text.split(",") if m.strip())
