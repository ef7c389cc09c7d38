"""``lostmid diagnose --model MODEL``: every trained-model study of lostmid on one model.

The model (a registry checkpoint, a Hugging Face folder, a GGUF file, a cached hub id)
goes through the four trained-model sections of ``lostmid reproduce`` and nothing else:
its influence profile against random-init twins built from its own configuration
(does pretraining deepen the valley, does the U persist, where is the valley), its
greedy accuracy by needle depth with the difficulty calibrated to it, the structure
and the behaviour on the same prompts, and the inference remedies paired by item. One
run folder, resumable, with ``report.html``, ``claims.json`` and ``reproduce.json``; the
same model through ``lostmid reproduce --trained MODEL`` at the same scales gives the
same numbers from the same seeds.

This module is torch-free (the CLI's help reads it); :func:`run_diagnose` imports the
run when it runs.

>>> config = DiagnoseConfig("./my-model", scale="quick")
>>> inner = config.reproduce_config()
>>> inner.models, inner.trained, inner.scale.checkpoints, inner.scale.dose
((), ('./my-model',), 'quick', 'off')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lostmid.checks import check_choice, check_seed
from lostmid.errors import UserError
from lostmid.models.spec import ModelSpec
from lostmid.reproduce.config import ReproduceConfig
from lostmid.runs.folder import RunFolder

FOLDER = RunFolder("diagnose", resumes="stages")
"""What ``run_diagnose`` writes into ``--out``: a reproduce run's files, its stages kept."""

DIAGNOSE_SCALES: dict[str, dict[str, str]] = {
    "quick": {
        "checkpoints": "quick",
        "real_behaviour": "quick",
        "real_link": "quick",
        "real_remedies": "quick",
    },
    "default": {
        "checkpoints": "default",
        "real_behaviour": "default",
        "real_link": "default",
        "real_remedies": "default",
    },
    "full": {
        "checkpoints": "full",
        "real_behaviour": "full",
        "real_link": "default",
        "real_remedies": "default",
    },
}
"""Each scale's scale of every trained-model section (``lostmid reproduce --help``)."""

MINUTES_135M = {"quick": 10.0, "default": 65.0, "full": 300.0}
"""Wall minutes on 2 cores for a model of SmolLM2-135M's size, the estimate said before a
run starts, scaled by the parameter count (docs/BENCHMARKS.md, "diagnose": the quick
scale's stages took 1,905 s of compute on a box loaded 2.5 times over, 22 min wall; the
default's and the full's are the sums of their sections' measured stage times, the
remedies' arms in turn on one core being the longest)."""
REFERENCE_PARAMETERS = 152_607_744  # SmolLM2-135M's, as lostmid.models.budget counts them

HELP = {
    "model": "The model: a registry checkpoint (smollm2-135m, gemma3-270m), a Hugging Face "
    "folder, a .gguf file or a cached hub id.",
    "scale": "quick (about 10 min on 2 cores at 135M parameters) | default (about an "
    "hour) | full (hours).",
    "chat_template": "auto (the tokenizer's template when it has one) | on | off.",
    "answer_prefix": "on: the answer starts inside the prompt | off: the prompt asks and stops.",
    "tokenizer": "Tokenizer when not the model's own: a directory, a cached hub id or bytes.",
    "dtype": "float32 | float64 | bfloat16 | float16.",
    "trust_remote_code": "Run the custom code the model's config names (auto_map).",
    "twin_init_std": "Initialiser range (std) of the model's random-init twins when its "
    "files do not say it (default: the registry's published value, the model's config, "
    "else 0.02); the range 0.02 / 0.08 is read beside it at the default and full scales.",
    "seed": "Seed of the inputs, the items and the twins.",
    "overwrite": "Recompute every stage instead of resuming.",
}


@dataclass(frozen=True)
class DiagnoseConfig:
    """One model's diagnosis (module doc); checked when made."""

    model: str
    scale: str = "default"
    chat_template: str = "auto"
    answer_prefix: str = "on"
    tokenizer: str | None = None
    dtype: str = "float32"
    trust_remote_code: bool = False
    twin_init_std: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        check_choice("--scale", self.scale, DIAGNOSE_SCALES)
        check_seed(self.seed)
        self.reproduce_config()  # checks the model's options

    @property
    def model_spec(self) -> ModelSpec:
        """The model, how it loads and how it is prompted."""
        return self.reproduce_config().trained_spec(self.model)

    def reproduce_config(self) -> ReproduceConfig:
        """The ``reproduce`` run it is: no at-init model, no training, the trained-model
        sections at this scale on this model."""
        return ReproduceConfig.at_scale(
            self.scale,
            models=(),
            seed=self.seed,
            trained=(self.model,),
            chat_template=self.chat_template,
            answer_prefix=self.answer_prefix,
            tokenizer=self.tokenizer,
            dtype=self.dtype,
            trust_remote_code=self.trust_remote_code,
            twin_init_std=self.twin_init_std,
            train_steps=0,
            behaviour_steps=0,
            dose="off",
            **DIAGNOSE_SCALES[self.scale],
        )


def estimate_minutes(scale: str, parameters: int) -> float:
    """Wall minutes on 2 cores, from the measured 135M-parameter run, linear in size.

    >>> round(estimate_minutes("default", 2 * REFERENCE_PARAMETERS))
    130
    """
    return MINUTES_135M[scale] * max(parameters, 1) / REFERENCE_PARAMETERS


@FOLDER.holds
def run_diagnose(
    config: DiagnoseConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Any = None,
    backend: Any = None,
) -> Any:
    """Check that the model fits every study of the scale (one line before any compute
    otherwise), say how long it will take, then run it (:func:`lostmid.reproduce.run.
    run_reproduce`); returns its :class:`~lostmid.reproduce.analysis.ReproduceResult`."""
    from lostmid.reproduce.run import run_opened

    try:
        inner, device = _check_diagnose(config, out, console)
        folder = FOLDER.open(out, config.model_spec.claim(inner.record()), overwrite=overwrite)
        return run_opened(
            inner, folder, out=out, device=device, console=console, backend=backend,
            label="diagnose",
        )  # fmt: skip
    except UserError as err:  # the sections' advice, in diagnose's own options
        raise UserError(in_diagnose_terms(str(err), config.scale)) from None


def in_diagnose_terms(message: str, scale: str) -> str:
    """A message of the reproduce sections diagnose runs, with advice diagnose can follow:
    its model is its argument (not ``--trained``), its prompts' length and its study's
    folder come from ``--scale`` (it has no ``--length`` or ``--checkpoints``), and no
    scale is smaller than the smallest.

    >>> print(in_diagnose_terms("--trained m: its context is 64 tokens, shorter than the "
    ...     "128 this scale's studies read; choose a smaller scale", "quick"))
    ... # doctest: +NORMALIZE_WHITESPACE
    model m: its context is 64 tokens, shorter than the 128 this scale's studies read;
    quick is the smallest scale: diagnose a model with a longer context
    """
    scales = list(DIAGNOSE_SCALES)
    larger = scales[scales.index(scale) + 1 :] if scale in scales else []
    longer = (
        f"choose a larger --scale ({', '.join(larger)})"
        if larger
        else "this model's tokenizer needs more tokens than diagnose's prompts hold"
    )
    text = message.replace("--trained ", "model ")
    if scale == scales[0]:
        text = text.replace(
            "; choose a smaller scale",
            f"; {scale} is the smallest scale: diagnose a model with a longer context",
        )
    text = re.sub(
        r"--length (\d+) is too short for", r"this scale's \1 tokens are too short for", text
    )
    text = re.sub(r"; use a longer --length( or fewer needles)?", f"; {longer}", text)
    text = text.replace(
        "give a folder a study wrote (benchmarks/bench_checkpoints.py --study DIR)",
        "rerun diagnose with --overwrite to study the model again",
    )
    return text.replace("--checkpoints ", "the study folder ")


def _check_diagnose(config: DiagnoseConfig, out: Path, console: Any) -> tuple[Any, str]:
    """The reproduce configuration diagnose runs and its device, once the model fits
    every study of the scale; says the model's size and the run's estimate."""
    from lostmid.models.load import check_trained_model
    from lostmid.reproduce.run import check_run

    inner = config.reproduce_config()
    spec = config.model_spec
    facts = check_trained_model(
        spec.name,
        1,
        option="diagnose",
        dtype=spec.dtype,
        trust_remote_code=spec.trust_remote_code,
    )
    device = check_run(inner, out)  # each section checks the model at its own length
    if console is not None:
        minutes = estimate_minutes(config.scale, int(facts["parameters"]))
        console.print(
            f"diagnose {config.model}: {facts['parameters'] / 1e6:.0f}M parameters, "
            f"{facts['layers']} layers",
            f"{config.scale} scale: about {minutes:.0f} min on 2 cores (resumable)",
            sep="\n",
        )
    return inner, device
