"""The options of ``lostmid series``: a series of checkpoints of one training run.

Torch-free (the CLI's help reads it); the checks that need the models' files (each
checkpoint exists, has weights, fits the length, shares the first one's architecture)
are made by :func:`lostmid.pretrained.series.run.check_series` before any compute.

>>> SeriesConfig(models=("run/step_000000", "run/step_001000")).steps_or_names()
(0, 1000)
>>> step_of("pythia-160m/step143000"), step_of("olmo/step1000-tokens4B"), step_of("final")
(143000, 1000, None)
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lostmid.checks import check_seed
from lostmid.errors import UserError

SERIES_KINDS = ("random", "text")
"""The input kinds measured by default (random token ids, English prose)."""

HELP = {
    "models": "The checkpoints of one training run, in step order, comma-separated: "
    "Hugging Face folders (lostmid train's checkpoints/step_NNNNNN, a Pythia or OLMo "
    "revision saved to a folder) or .gguf files.",
    "steps": "Each checkpoint's training step, comma-separated (default: read from the "
    "names, e.g. step_001000, step143000).",
    "length": "Tokens an input (L): the influence of each position on the last.",
    "inputs": "Inputs of each kind (N); every checkpoint and every twin sees the same ones.",
    "twins": "Random-init twins (S, seeds 0..S-1), built from the first checkpoint's "
    "configuration: one reference for every checkpoint.",
    "probes": "Rademacher probes an input (the Jacobian norm's estimator).",
    "kinds": "Input kinds, comma-separated: random | text | records | chat.",
    "twin_init_std": "Initialiser range (std) of the twins when the checkpoints' files do "
    "not say it (default: the configuration's, else 0.02).",
    "seed": "Seed of the inputs and the probes.",
    "overwrite": "Discard the saved profiles and measure again (another configuration in "
    "the same --out is refused without it).",
}

_STEP = re.compile(r"step[_-]?(\d+)", re.IGNORECASE)


def step_of(name: str) -> int | None:
    """The training step a checkpoint's name says (``step_000010``, ``step143000``,
    ``step1000-tokens4B``), or None."""
    found = _STEP.findall(Path(name.rstrip("/\\")).name)
    return int(found[-1]) if found else None


@dataclass(frozen=True)
class SeriesConfig:
    """A series of checkpoints of one training run (module doc); checked when made."""

    models: tuple[str, ...]
    steps: tuple[int, ...] | None = None
    length: int = 512
    inputs: int = 12
    twins: int = 3
    probes: int = 2
    kinds: tuple[str, ...] = SERIES_KINDS
    twin_init_std: float | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        check_seed(self.seed)
        if len(self.models) < 2:
            raise UserError(
                f"--models: a series needs at least 2 checkpoints of one run, in step order; "
                f"got {len(self.models)}"
            )
        if len(set(self.models)) < len(self.models):
            raise UserError("--models: a checkpoint is named twice")
        steps = self.steps_or_names()
        if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):
            shown = ", ".join(map(str, steps))
            raise UserError(
                f"--models: the checkpoints must be in step order, each step larger than the "
                f"one before; their steps are {shown}"
            )
        self.study_config()  # the kinds, counts and length, in the study's words

    def steps_or_names(self) -> tuple[int, ...]:
        """Each checkpoint's step: ``--steps``, else read from its name."""
        if self.steps is not None:
            if len(self.steps) != len(self.models):
                raise UserError(
                    f"--steps gives {len(self.steps)} steps for {len(self.models)} checkpoints; "
                    "give one a checkpoint"
                )
            if any(s < 0 for s in self.steps):
                raise UserError("--steps: a training step is >= 0")
            return tuple(self.steps)
        found = [step_of(name) for name in self.models]
        missing = [name for name, s in zip(self.models, found, strict=True) if s is None]
        if missing:
            raise UserError(
                f"--models {missing[0]}: its name says no step (step_NNNNNN, stepNNNN); "
                "give every checkpoint's step with --steps"
            )
        return tuple(int(s) for s in found if s is not None)

    def study_config(self) -> Any:
        """The study design every checkpoint is measured under
        (:class:`lostmid.pretrained.study.StudyConfig`: one length, these kinds, inputs,
        twins and probes); its checks are the study's."""
        from lostmid.pretrained.study import StudyConfig

        return StudyConfig(
            checkpoints=self.models,
            lengths=(self.length,),
            kinds=self.kinds,
            inputs=self.inputs,
            twins=self.twins,
            probes=self.probes,
            seed=self.seed,
            twin_init_std=self.twin_init_std,
        )

    def record(self) -> dict[str, Any]:
        """The resolved configuration (the steps filled in)."""
        return asdict(self) | {"steps": list(self.steps_or_names())}
