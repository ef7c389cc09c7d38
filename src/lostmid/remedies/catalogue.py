"""The built-in remedies, one class each (see :mod:`lostmid.remedies.base`).

Training-time (applied to a retrieval preset, equal budget):
``baseline``, ``oversample[:fixed|rho|adaptive|middle-cover|deficit]``, ``curriculum``,
``curriculum-reverse``,
``loss-weight``, ``prefix``, ``residual[:schedule|gate]``, ``channels``.
Inference-time (on a model ``lostmid retrieve`` accepts): ``query-aware``, ``calibrate``,
``ms-poe``.
The laws and weights are the pure functions of :mod:`lostmid.remedies.positions`; the
model surgery is in :mod:`lostmid.remedies.surgery`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from lostmid.remedies import positions
from lostmid.remedies.base import InferenceBatch, Remedy, Setting, register


@register
class Baseline(Remedy):
    name = "baseline"
    description = "the preset as it is: its gold law, plain loss, causal model"


@register
class Oversample(Remedy):
    """Gold laws (:mod:`~lostmid.remedies.positions`), each a tilt of the law it meets.

    Theory-derived: ``rho``, p ∝ 1/rho_H(x_g), which is smallest at the last record, so it
    weights the last record most. Aimed at the valley: ``fixed``, a bump in the middle
    (:func:`~lostmid.remedies.positions.valley_bump`, a record lifted at most 1 + boost =
    3x); ``middle-cover``, every middle record raised to at least uniform coverage of the
    law it meets (:func:`~lostmid.remedies.positions.middle_cover`, factors derived from
    that law). Measured from the model (on the validation split,
    :mod:`lostmid.remedies.validation`): ``adaptive``, half uniform, half the errors
    (:func:`~lostmid.remedies.positions.adaptive`, a tilt of the data's law);
    ``deficit``, the trained-on law itself proportional to the errors
    (:func:`~lostmid.remedies.positions.deficit`, the met law divided out)."""

    name = "oversample"
    description = "gold positions drawn more often where the valley is"
    arguments = ("fixed", "rho", "adaptive", "middle-cover", "deficit")
    default_argument = "fixed"
    argument_descriptions = {
        "fixed": "gold positions drawn more often in the middle (a bump, at most 3x)",
        "rho": "gold positions drawn ∝ 1/rho_H(x) (theory): the last record weighs most",
        "adaptive": "gold law half uniform, half the validation errors, tilting the data's",
        "middle-cover": "middle records raised to at least uniform coverage of the data's law",
        "deficit": "trained-on law ∝ each record's validation error (data's law divided out)",
    }
    boost = 2.0
    width = 0.2
    mix = 0.5
    deficit_mix = 0.95

    def __init__(self, argument: str | None = None) -> None:
        super().__init__(argument)
        self._probs: np.ndarray | None = None
        self._met: np.ndarray | None = None

    @property
    def uses_validation(self) -> bool:
        return self.argument in ("adaptive", "deficit")

    def parameters(self) -> dict[str, Any]:
        validation = "accuracy on the validation split at each evaluation"
        knobs: dict[str, dict[str, Any]] = {
            "fixed": {"boost": self.boost, "width": self.width},
            "rho": {"weight": "1/rho_H(x_g)"},
            "adaptive": {"mix": self.mix, "updated": validation},
            "middle-cover": {"coverage": "middle records >= 1/pairs of the met law"},
            "deficit": {"mix": self.deficit_mix, "updated": validation},
        }
        return {"law": self.argument, **knobs[str(self.argument)]}

    def gold_probs(self, setting: Setting) -> Callable[[int], np.ndarray]:
        x = np.asarray(setting.centres)
        if self.argument == "fixed":
            fixed = positions.valley_bump(x, self.boost, self.width)
            return lambda step: fixed
        if self.argument == "rho":
            w = positions.inverse_density(x, setting.layers, setting.alpha)
            law = w / w.sum()
            return lambda step: law
        if self.argument == "middle-cover":
            cover = positions.middle_cover(setting.met_law)
            return lambda step: cover
        self._met = setting.met_law
        if self.argument == "deficit":  # before the first validation: every record wrong
            self._probs = positions.deficit(np.zeros(setting.pairs), self._met, self.deficit_mix)
        else:
            self._probs = np.full(setting.pairs, 1.0 / setting.pairs)
        # read at each call (on_validation replaces it); mypy cannot see it set just above
        return lambda step: self._probs  # type: ignore[return-value]

    def on_validation(self, accuracy: np.ndarray, step: int) -> None:
        if self.argument == "adaptive":
            self._probs = positions.adaptive(accuracy, self.mix)
        elif self.argument == "deficit":
            assert self._met is not None, "gold_probs sets the met law first"
            self._probs = positions.deficit(accuracy, self._met, self.deficit_mix)


@register
class Curriculum(Remedy):
    name = "curriculum"
    description = "middle records only for the first 30% of steps, then uniform"
    fraction = 0.3
    reverse = False

    def parameters(self) -> dict[str, Any]:
        return {"fraction": self.fraction, "first": "outer" if self.reverse else "middle"}

    def gold_probs(self, setting: Setting) -> Callable[[int], np.ndarray]:
        def law(step: int) -> np.ndarray:
            p = positions.curriculum(
                step, setting.steps, setting.pairs, self.fraction, self.reverse
            )
            return positions.with_support(p, setting.queries)

        return law


@register
class CurriculumReverse(Curriculum):
    name = "curriculum-reverse"
    description = "control: outer records only for the first 30% of steps, then uniform"
    reverse = True


@register
class LossWeight(Remedy):
    name = "loss-weight"
    description = (
        "answer loss x 1/rho_H(x) of its gold record (theory: the last record weighs most), "
        "mean 1, cap 4"
    )
    cap = 4.0

    def parameters(self) -> dict[str, Any]:
        return {"cap": self.cap}

    def gold_weights(self, setting: Setting) -> np.ndarray:
        w = positions.inverse_density(np.asarray(setting.centres), setting.layers, setting.alpha)
        return positions.capped_mean_one(w, self.cap)


@register
class Prefix(Remedy):
    name = "prefix"
    description = "prefix-LM: bidirectional attention over the records, causal after"

    def surgery(self, setting: Setting) -> Any:
        from lostmid.remedies.surgery import prefix_variant

        return prefix_variant(setting.prefix)

    def theory(self, setting: Setting) -> dict[str, Any]:
        return {"mask": f"prefix:{setting.prefix}", "alphas": [setting.alpha] * setting.layers}


@register
class Residual(Remedy):
    """schedule: the attention branch of layer l (1-indexed) scaled by s_l = 1/l (deeper
    layers route more through the residual path); gate: a learned scalar per layer, 0.1
    at init (adds one parameter per layer)."""

    name = "residual"
    description = "attention branch scaled per layer: s_l = 1/l, or a learned gate from 0.1"
    arguments = ("schedule", "gate")
    default_argument = "schedule"
    gate_init = 0.1

    def scales(self, layers: int) -> list[float]:
        if self.argument == "gate":
            return [self.gate_init] * layers
        return [1.0 / (layer + 1) for layer in range(layers)]

    def parameters(self) -> dict[str, Any]:
        if self.argument == "gate":
            return {"routing": "gate", "gate_init": self.gate_init}
        return {"routing": "schedule", "scale": "s_l = 1/l"}

    def surgery(self, setting: Setting) -> Any:
        from lostmid.remedies.surgery import residual_variant

        return residual_variant(self.scales(setting.layers), learned=self.argument == "gate")

    def theory(self, setting: Setting) -> dict[str, Any]:
        # a branch scaled by s has gain s g, g = a/(1-a), and a' = s g / (1 + s g)
        a = setting.alpha
        gain = a / (1.0 - a) if a < 1.0 else float("inf")
        alphas = [s * gain / (1.0 + s * gain) for s in self.scales(setting.layers)]
        return {"mask": "causal", "alphas": alphas}


@register
class Channels(Remedy):
    """:func:`lostmid.remedies.surgery.channels_variant`: 4 learned memory tokens at
    regular intervals of the records (adds 4 x d parameters; the data are unchanged)."""

    name = "channels"
    description = "4 learned memory tokens at regular intervals of the context"
    count = 4

    def parameters(self) -> dict[str, Any]:
        return {"memory_tokens": self.count, "placement": "evenly inside the records"}

    def surgery(self, setting: Setting) -> Any:
        from lostmid.remedies.surgery import channels_variant

        return channels_variant(setting.prefix, self.count)


@register
class QueryAware(Remedy):
    name = "query-aware"
    kind = "inference"
    description = "the query before and after the data (Liu et al.), no extra pass"
    query_aware = True


@register
class MsPoE(Remedy):
    """:func:`lostmid.remedies.patches.ms_poe` while the model scores."""

    name = "ms-poe"
    kind = "inference"
    description = "per-head rotary positions divided by ratios in [1.2, 1.8] (rotary only)"

    def parameters(self) -> dict[str, Any]:
        return {"ratios": "evenly spaced in [1.2, 1.8] over the key/value heads"}

    def patch(self, model: Any, batch: Any) -> AbstractContextManager[Any]:
        from lostmid.remedies.patches import ms_poe

        return ms_poe(model)


@register
class Calibrate(Remedy):
    """Found in the middle (Hsieh et al. 2024), adapted: per example, one extra pass on
    the filler prompt (every context token replaced by a neutral token) records the
    attention of the last ceil(H/2) layers, the positional prior p; the scoring pass then
    divides the attention of the query and answer tokens on the context by p, keeping its
    total (:func:`lostmid.remedies.patches.calibrate_weights`). Eager attention."""

    name = "calibrate"
    kind = "inference"
    description = "attention on the context divided by its positional prior (1 extra pass)"
    extra_forward_passes = 1

    def parameters(self) -> dict[str, Any]:
        return {
            "layers": "last ceil(H/2)",
            "prior": "same prompt, context tokens -> one neutral token",
            "rule": "w'_ij = w_ij/p_ij * sum_C w / sum_C (w/p) for queries after the context",
        }

    def score(self, model: Any, batch: InferenceBatch) -> Any:
        import torch

        from lostmid.behaviour.decoding.generate import TeacherScores, teacher_forced
        from lostmid.models import adapter_for_model
        from lostmid.remedies.patches import calibrated

        adapter = adapter_for_model(model)
        layers = len(adapter.blocks(model))
        last = list(range(layers // 2, layers))
        # the prior is attention weights: the filler pass skips the output head (at
        # Gemma 3's 262k vocabulary more than half of a pass) and the cache
        base = adapter.base(model)
        logprob, argmax = [], []
        for prompt, target, region in zip(batch.prompts, batch.targets, batch.regions, strict=True):
            start, end = region
            sequence = list(prompt) + list(target)[:-1]
            filler = sequence[:start] + [batch.filler] * (end - start) + sequence[end:]
            with calibrated(model, last, region) as state, torch.no_grad():
                base(
                    input_ids=torch.tensor([filler], device=next(model.parameters()).device),
                    use_cache=False,
                )
                state["mode"] = "calibrate"
                one = teacher_forced(
                    model,
                    [prompt],
                    [target],
                    batch_size=1,
                    max_length=batch.max_length,
                    vocab_size=batch.vocab_size,
                )
            logprob.append(one.logprob[0])
            argmax.append(one.argmax[0])
        return TeacherScores(logprob=np.array(logprob), argmax=np.array(argmax, dtype=bool))
