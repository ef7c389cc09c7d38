"""Small causal LMs for training, built through :mod:`lostmid.models`.

The models are ordinary Hugging Face causal LMs (``Qwen2ForCausalLM``,
``GPT2LMHeadModel``, ...: every family :data:`lostmid.models.BUILDABLE_FAMILIES`
names), so every checkpoint (saved with ``save_pretrained``) can be loaded and
measured like any other model. The family's adapter turns the shape into its config;
nothing here knows a family. A :class:`ModelVariant` is the plug-in point for
architecture interventions (another residual routing, another attention mask): it
receives the freshly built model and returns the model to train.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

from lostmid.files import atomic_directory
from lostmid.models import LoadedModel, ModelShape, build_causal_lm, build_config
from lostmid.runs.budget import OVERRIDE
from lostmid.train.config import ModelSpec


@dataclass(frozen=True)
class ModelVariant:
    """An architecture intervention: ``apply(model) -> model`` right after building.

    ``apply`` may modify the model in place and return it, or wrap/replace it; the
    result must still accept ``input_ids`` or ``inputs_embeds`` and return ``.logits``.
    ``name`` goes into the run's metadata.
    """

    name: str
    apply: Callable[[PreTrainedModel], PreTrainedModel]


def hf_config(spec: ModelSpec) -> PretrainedConfig:
    """The Hugging Face config of ``spec`` (dropout 0, no KV cache; the model is built
    with SDPA attention)."""
    spec.validate()
    shape = ModelShape(
        layers=spec.layers,
        hidden=spec.hidden,
        heads=spec.heads,
        kv_heads=spec.kv_heads,
        intermediate=spec.intermediate,
        context=spec.context,
        vocab_size=spec.vocab_size,
        rope_theta=spec.rope_theta,
        tie_embeddings=spec.tie_embeddings,
    )
    return build_config(spec.family, shape)


def build_model(spec: ModelSpec, seed: int, variant: ModelVariant | None = None) -> PreTrainedModel:
    """A randomly initialised model of shape ``spec``; the same seed gives the same weights,
    those a ``variant`` adds included (drawn from ``seed``, whatever the process ran
    before: a remedy's rerun after a kill gives the uninterrupted run's numbers).

    >>> m = build_model(ModelSpec(layers=2, hidden=32, heads=2, kv_heads=1,
    ...                           intermediate=64, context=16), seed=0)
    >>> m.config.num_hidden_layers
    2
    """
    model = build_causal_lm(hf_config(spec), seed=seed, attention="sdpa")
    if variant is not None:  # what the variant draws (memory tokens...) from the seed too,
        with torch.random.fork_rng(devices=[]):  # not from whatever ran before it
            torch.manual_seed(seed)
            model = variant.apply(model)
    return model


def parameter_count(model: nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters())


def as_loaded(model: PreTrainedModel, seed: int = 0) -> LoadedModel:
    """Wrap a model being trained as a :class:`lostmid.models.LoadedModel` for measurement.

    The model is shared, not copied: measuring reads the current weights.
    """
    return LoadedModel.from_module(
        model, spec="lostmid-train", init="trained", seed=seed, source="training"
    )


@contextmanager
def frozen(model: nn.Module) -> Iterator[nn.Module]:
    """Eval mode and no parameter gradients inside; the previous state restored after.

    Measurements differentiate with respect to inputs only; freezing the weights keeps
    them from building weight gradients that would leak into the next training step.
    """
    flags = [p.requires_grad for p in model.parameters()]
    was_training = model.training
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    try:
        yield model
    finally:
        for p, flag in zip(model.parameters(), flags, strict=True):
            p.requires_grad_(flag)
        model.train(was_training)


def save_checkpoint(
    model: PreTrainedModel,
    directory: Path,
    also: Callable[[Path], object] | None = None,
) -> Path:
    """``model.save_pretrained(directory)`` (config.json + model.safetensors), quietly
    and atomically (:func:`lostmid.files.atomic_directory`): the folder appears whole
    or not at all, also after a crash or on a full disk. ``also(folder)`` writes more
    files into it before it appears (e.g. the byte-tokenizer marker)."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        with atomic_directory(directory) as tmp:
            model.save_pretrained(tmp)
            if also is not None:
                also(tmp)
    finally:
        if enabled:
            hf_logging.enable_progress_bar()
    return directory


TRAINING_BYTES_PER_PARAMETER = 16
"""float32 weights, their gradients and AdamW's two moments: 4 x 4 bytes a parameter."""


def training_bytes(spec: ModelSpec, batch_size: int) -> float:
    """A rough upper bound on the memory one training step of ``spec`` needs: weights,
    gradients and optimiser state (:data:`TRAINING_BYTES_PER_PARAMETER`) for
    :func:`lostmid.models.budget.parameter_count` parameters, the activations a backward
    pass keeps for ``batch_size`` sequences of ``spec.context`` tokens
    (:func:`lostmid.models.budget.activation_bytes`, SDPA attention), and 200 MB of
    runtime.

    >>> small = ModelSpec(layers=2, hidden=32, heads=2, kv_heads=1, intermediate=64,
    ...                   context=16)
    >>> 0.2e9 < training_bytes(small, 4) < 0.21e9
    True
    """
    from lostmid.models.budget import activation_bytes
    from lostmid.models.budget import parameter_count as estimated_parameters

    config = hf_config(spec)
    weights = estimated_parameters(config) * TRAINING_BYTES_PER_PARAMETER
    tokens = batch_size * spec.context
    acts = activation_bytes(config, tokens=tokens, length=spec.context, eager=False)
    return weights + acts + 200e6


def check_training_size(
    spec: ModelSpec,
    batch_size: int,
    what: str,
    steps: int | None = None,
    *,
    steps_flag: str = "--steps",
    override: str | None = OVERRIDE,
) -> None:
    """Refuse, in one line and before the model is built, a training run whose
    :func:`training_bytes` exceed this machine's free memory, or whose ``steps`` would
    take over a day even at the floor of :func:`lostmid.runs.budget.pass_seconds` (one
    forward and backward pass of a batch a step); ``what`` names the run, ``steps_flag``
    the option that set ``steps``, ``override`` the flag that skips the check (None for a
    command without one)."""
    from lostmid.models.budget import parameter_count as estimated_parameters
    from lostmid.runs.budget import check_work, pass_seconds

    # a closed form first: a config of 10^12 layers is never built to be counted
    what = what if steps is None else f"{what} {steps_flag} {steps:,}"
    attention = 2 * spec.hidden * (spec.hidden + spec.hidden * spec.kv_heads // spec.heads)
    rough = spec.layers * (attention + 3 * spec.hidden * spec.intermediate)
    check_work(what, passes=0, seconds_each=0.0, need_bytes=16.0 * rough, override=override)
    step = pass_seconds(
        layers=spec.layers,
        parameters=estimated_parameters(hf_config(spec)),
        tokens=batch_size * spec.context,
    )
    check_work(
        what,
        passes=steps or 0,
        seconds_each=step,
        need_bytes=training_bytes(spec, batch_size),
        override=override,
    )
