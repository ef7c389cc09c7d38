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
* ``on_validation(accuracy, step)``: with ``uses_validation``, sees the accuracy by gold
  index on a validation split at each evaluation step (adaptive laws); the split is
  disjoint from the held-out examples of the final score
  (:mod:`lostmid.remedies.validation`), which no remedy sees.

A gold law is written relative to uniform: ``--law tilt`` multiplies the training data's
law by it, ``--law replace`` uses it alone (:func:`lostmid.remedies.training.combine_laws`).
A remedy that aims at a coverage (``oversample:middle-cover``, ``oversample:deficit``)
derives its law from ``Setting.data_law``, the law it meets (the data's under ``tilt``,
uniform under ``replace``).

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
    without replacement, so a gold law needs at least this many non-zero entries);
    data_law: the gold law (pairs,) the remedy's law meets: the training data's under
    ``--law tilt``, None (uniform) under ``--law replace``.
    """

    pairs: int
    spans: tuple[tuple[int, int], ...]
    prefix: int
    prompt_length: int
    layers: int
    steps: int
    alpha: float
    queries: int = 1
    data_law: tuple[float, ...] | None = None

    @property
    def met_law(self) -> np.ndarray:
        """``data_law`` as an array, uniform when None."""
        if self.data_law is None:
            return np.full(self.pairs, 1.0 / self.pairs)
        return np.asarray(self.data_law, dtype=np.float64)

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
    argument_descriptions: ClassVar[dict[str, str]] = {}  # one line per argument, if any
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

    @property
    def uses_validation(self) -> bool:
        """Whether ``on_validation`` is to see the validation split (default: no)."""
        return False

    def describe(self) -> str:
        """The one-line description of this spec (its argument's, when it has one)."""
        return self.argument_descriptions.get(str(self.argument), self.description)

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

    def on_validation(self, accuracy: np.ndarray, step: int) -> None:
        """Sees the accuracy (pairs,) by gold index on the validation split at ``step``
        (only when ``uses_validation``; :mod:`lostmid.remedies.validation`)."""

    def theory(self, setting: Setting) -> dict[str, Any] | None:
        """The theory's prediction for this remedy's structural profile, when it has one:
        ``{"mask": spec, "alphas": [a_l]}`` for :func:`lostmid.theory.influence_row`."""
        return None

    # -- inference hooks -----------------------------------------------------------------
    def patch(self, model: Any, batch: Any) -> AbstractContextManager[Any]:
        """Change ``model`` while it scores ``batch``; the default changes nothing."""
        return nullcontext(model)

    def score(self, model: Any, batch: InferenceBatch) -> Any:
        """Teacher-forced scores (:class:`~lostmid.behaviour.score.TeacherScores`): in
        batches of 8 prompts, one a forward where padded batches do not pay (a CPU)."""
        from lostmid.behaviour.decoding.generate import padded_batches_pay, teacher_forced

        device = next(model.parameters()).device
        with self.patch(model, batch) as patched:
            return teacher_forced(
                patched,
                batch.prompts,
                batch.targets,
                batch_size=8 if padded_batches_pay(device) else 1,
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
    if set(cls.argument_descriptions) - set(cls.arguments):
        raise ValueError(f"remedy {cls.name!r} describes arguments it does not take")
    REGISTRY[cls.name] = cls
    return cls
