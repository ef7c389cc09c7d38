"""The remedy contract: a small named object per remedy, and the table it registers in.

A remedy is a subclass of :class:`Remedy` that sets ``name``, ``kind`` (``training`` or
``inference``) and a one-line ``description``, and overrides the hooks it needs; the
others keep the baseline's behaviour. Decorating it with :func:`register` makes it
available to ``lostmid remedies --remedies NAME``; that is all adding a remedy takes.

Training hooks (given the :class:`Setting` of the run):

* ``gold_probs(setting)``: a function step -> probabilities (pairs,) of the gold index;
* ``gold_weights(setting)``: the loss weight (pairs,) of an answer by its gold index;
* ``surgery(setting)``: a :class:`~lostmid.train.model.ModelVariant` applied right after
  the model is built (another attention mask, another residual routing);
* ``on_checkpoint(checkpoint)``: sees each evaluation during training (adaptive laws).

Inference hooks (on a model that ``lostmid retrieve`` accepts, no training):

* ``query_aware``: the prompt transform of Liu et al. (query before and after the data);
* ``patch(model, examples)``: a context manager that changes the model while it scores;
* ``score(model, batch)``: the whole teacher-forced scoring of an :class:`InferenceBatch`
  (default: :func:`~lostmid.behaviour.score.teacher_forced` under ``patch``), for
  remedies that need more than one pass per example.

A spec ``NAME:ARG`` passes ``ARG`` to the remedy (``oversample:rho``); each remedy
documents the arguments it takes. Remedies are looked up by spec in
:mod:`lostmid.remedies.registry`. This module imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from lostmid.checks import check_choice
from lostmid.errors import UserError

KINDS = ("training", "inference")
REGISTRY: dict[str, type[Remedy]] = {}


@dataclass(frozen=True)
class Setting:
    """What a training-time remedy may read about the run it changes.

    pairs: records per example; spans: each record's ``[start, end)`` token span
    (0-indexed); prefix: prompt tokens up to the end of the records (the context of the
    prefix-LM); prompt_length: tokens up to the query (the last prompt token is the query
    position t); layers: model depth; steps: optimiser steps; alpha: the theory's
    residual strength a for rho_H; queries: gold indices asked per training row (drawn
    without replacement, so a gold law needs at least this many non-zero entries).
    """

    pairs: int
    spans: tuple[tuple[int, int], ...]
    prefix: int
    prompt_length: int
    layers: int
    steps: int
    alpha: float
    queries: int = 1

    @property
    def centres(self) -> np.ndarray:
        """x_g of each record (:func:`lostmid.remedies.positions.record_centres`)."""
        from lostmid.remedies.positions import record_centres

        return record_centres(self.spans, self.prompt_length)


@dataclass(frozen=True)
class InferenceBatch:
    """What an inference remedy scores: token ids per example, the context of each
    (``regions``: ``[start, end)`` prompt token span of the records, 0-indexed), a
    neutral filler token id, and the model's limits."""

    prompts: list[list[int]]
    targets: list[list[int]]
    regions: list[tuple[int, int]]
    filler: int
    max_length: int | None
    vocab_size: int | None


class Remedy:
    """Base class: the baseline (no hook changes anything). See the module docstring."""

    name: ClassVar[str] = ""
    kind: ClassVar[str] = "training"
    description: ClassVar[str] = ""
    arguments: ClassVar[tuple[str, ...]] = ()  # accepted NAME:ARG values; () takes none
    default_argument: ClassVar[str | None] = None
    query_aware: ClassVar[bool] = False
    extra_forward_passes: ClassVar[int] = 0  # per example, for inference remedies

    def __init__(self, argument: str | None = None) -> None:
        if argument is not None and not self.arguments:
            raise UserError(f"--remedies {self.name} takes no ':' argument, got {argument!r}")
        if argument is not None:
            check_choice(f"--remedies {self.name}: argument", argument, self.arguments)
        self.argument = argument if argument is not None else self.default_argument

    @property
    def spec(self) -> str:
        """``name`` or ``name:argument`` (the default argument is left out)."""
        if self.argument is None or self.argument == self.default_argument:
            return self.name
        return f"{self.name}:{self.argument}"

    def parameters(self) -> dict[str, Any]:
        """The remedy's knobs, recorded next to its results."""
        return {} if self.argument is None else {"argument": self.argument}

    # -- training hooks ------------------------------------------------------------------
    def gold_probs(self, setting: Setting) -> Callable[[int], np.ndarray] | None:
        return None

    def gold_weights(self, setting: Setting) -> np.ndarray | None:
        return None

    def surgery(self, setting: Setting) -> Any:
        """A :class:`lostmid.train.model.ModelVariant`, or None."""
        return None

    def on_checkpoint(self, checkpoint: Any) -> None:
        """Sees each :class:`~lostmid.behaviour.training.RetrievalCheckpoint`."""

    def theory(self, setting: Setting) -> dict[str, Any] | None:
        """The theory's prediction for this remedy's structural profile, when it has one:
        ``{"mask": spec, "alphas": [a_l]}`` for :func:`lostmid.theory.influence_row`."""
        return None

    # -- inference hooks -----------------------------------------------------------------
    def patch(self, model: Any, batch: Any) -> AbstractContextManager[Any]:
        """Change ``model`` while it scores ``batch``; the default changes nothing."""
        return nullcontext(model)

    def score(self, model: Any, batch: InferenceBatch) -> Any:
        """Teacher-forced scores (:class:`~lostmid.behaviour.score.TeacherScores`)."""
        from lostmid.behaviour.decoding import teacher_forced

        with self.patch(model, batch) as patched:
            return teacher_forced(
                patched,
                batch.prompts,
                batch.targets,
                batch_size=8,
                max_length=batch.max_length,
                vocab_size=batch.vocab_size,
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec!r})"


def register(cls: type[Remedy]) -> type[Remedy]:
    """Class decorator: add a :class:`Remedy` subclass to the registry under its name."""
    if not cls.name or cls.name in REGISTRY:
        raise ValueError(f"remedy name {cls.name!r} is empty or taken")
    check_choice("kind", cls.kind, KINDS)
    if not cls.description:
        raise ValueError(f"remedy {cls.name!r} needs a one-line description")
    REGISTRY[cls.name] = cls
    return cls
