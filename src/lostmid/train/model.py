"""Small causal LMs for training, built from Hugging Face config classes.

The models are ordinary ``Qwen2ForCausalLM`` / ``GPT2ForCausalLM`` instances, so every
checkpoint (saved with ``save_pretrained``) can be loaded and measured like any other
model. A :class:`ModelVariant` is the plug-in point for architecture interventions
(another residual routing, another attention mask): it receives the freshly built
model and returns the model to train.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedModel, Qwen2Config, Qwen2ForCausalLM

from lostmid.errors import UserError
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


def hf_config(spec: ModelSpec) -> Qwen2Config | GPT2Config:
    """The Hugging Face config of ``spec`` (dropout 0, no KV cache, SDPA attention)."""
    spec.validate()
    if spec.family == "qwen2":
        return Qwen2Config(
            vocab_size=spec.vocab_size,
            hidden_size=spec.hidden,
            intermediate_size=spec.intermediate,
            num_hidden_layers=spec.layers,
            num_attention_heads=spec.heads,
            num_key_value_heads=spec.kv_heads,
            max_position_embeddings=spec.context,
            rope_parameters={"rope_type": "default", "rope_theta": spec.rope_theta},
            tie_word_embeddings=spec.tie_embeddings,
            use_cache=False,
            attn_implementation="sdpa",
        )
    if spec.family == "gpt2":
        return GPT2Config(
            vocab_size=spec.vocab_size,
            n_positions=spec.context,
            n_embd=spec.hidden,
            n_layer=spec.layers,
            n_head=spec.heads,
            n_inner=spec.intermediate,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=None,
            eos_token_id=None,
            tie_word_embeddings=spec.tie_embeddings,
            use_cache=False,
            attn_implementation="sdpa",
        )
    raise UserError(f"unknown model family '{spec.family}'; use qwen2 or gpt2")


def build_model(spec: ModelSpec, seed: int, variant: ModelVariant | None = None) -> PreTrainedModel:
    """A randomly initialised model of shape ``spec``; the same seed gives the same weights.

    >>> m = build_model(ModelSpec(layers=2, hidden=32, heads=2, kv_heads=1,
    ...                           intermediate=64, context=16), seed=0)
    >>> m.config.num_hidden_layers
    2
    """
    config = hf_config(spec)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model: PreTrainedModel = (
            Qwen2ForCausalLM(config) if spec.family == "qwen2" else GPT2LMHeadModel(config)
        )
    if variant is not None:
        model = variant.apply(model)
    return model


def parameter_count(model: nn.Module) -> int:
    """Number of distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in model.parameters())


def resolve_device(device: str) -> torch.device:
    """``auto`` is CUDA when available, else CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except RuntimeError:
        raise UserError(f"unknown device '{device}'; use cpu, cuda, cuda:N or auto") from None


def as_loaded(model: PreTrainedModel, seed: int = 0) -> Any:
    """Wrap a model being trained as a :class:`lostmid.models.LoadedModel` for measurement.

    The model is shared, not copied: measuring reads the current weights.
    """
    from lostmid.models import LoadedModel, adapter_for

    config = model.config
    param = next(model.parameters())
    return LoadedModel(
        model=model,
        adapter=adapter_for(config.model_type),
        spec="lostmid-train",
        family=config.model_type,
        num_layers=int(config.num_hidden_layers),
        hidden_size=int(config.hidden_size),
        vocab_size=int(config.vocab_size),
        max_length=int(config.max_position_embeddings),
        init="trained",
        seed=seed,
        no_rope=False,
        no_pos_emb=False,
        dtype=str(param.dtype).removeprefix("torch."),
        device=str(param.device),
        source="training",
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


def save_checkpoint(model: PreTrainedModel, directory: Path) -> Path:
    """``model.save_pretrained(directory)`` (config.json + model.safetensors), quietly."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(directory)
    finally:
        if enabled:
            hf_logging.enable_progress_bar()
    return directory
