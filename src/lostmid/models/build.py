"""Build causal LMs from configs: the one place a model is constructed from scratch.

:func:`build_config` turns a family name and a :class:`~lostmid.models.shape.ModelShape`
into that family's Hugging Face config (the family's adapter knows its keyword
names); :func:`build_causal_lm` builds the randomly initialised model under a seed.
Both :func:`lostmid.models.load_model` and training use them.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import torch

from lostmid.errors import UserError
from lostmid.models.adapters import ADAPTERS, adapter_for
from lostmid.models.shape import ModelShape

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
ATTENTION = ("sdpa", "eager")
BUILDABLE_FAMILIES: tuple[str, ...] = tuple(t for a in ADAPTERS for t in a.model_types)
"""Config ``model_type`` values :func:`build_config` can build (every adapted family)."""


def supports_sdpa(config: PretrainedConfig) -> bool:
    """Whether the family's causal-LM class has an SDPA attention kernel (BLOOM and
    Gemma2 do not: they always run eager)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    try:
        cls = MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    except KeyError:
        return True  # let the library say what is wrong
    return bool(getattr(cls, "_supports_sdpa", False))


def build_config(family: str, shape: ModelShape) -> PretrainedConfig:
    """The Hugging Face config of a ``family`` model (a config ``model_type``) of ``shape``.

    Dropout is 0 and the KV cache off, so training runs are deterministic.

    >>> shape = ModelShape(layers=2, hidden=32, heads=4, kv_heads=2)
    >>> build_config("qwen2", shape).num_key_value_heads
    2
    >>> build_config("gpt2", ModelShape(layers=3, hidden=32, heads=4)).n_layer
    3
    """
    if family not in BUILDABLE_FAMILIES:
        raise UserError(
            f"unknown model family {family!r}; choose one of {', '.join(BUILDABLE_FAMILIES)}"
        )
    for name in ("layers", "hidden", "heads", "context", "vocab_size"):
        if getattr(shape, name) < 1:
            raise UserError(f"model.{name} must be >= 1, got {getattr(shape, name)}")
    if shape.hidden % shape.heads:
        raise UserError(
            f"model.hidden ({shape.hidden}) must be divisible by model.heads ({shape.heads})"
        )
    if shape.kv_heads is not None and (shape.kv_heads < 1 or shape.heads % shape.kv_heads):
        raise UserError(
            f"model.heads ({shape.heads}) must be divisible by model.kv_heads ({shape.kv_heads})"
        )
    return adapter_for(family).build_config(family, shape)


def build_causal_lm(
    config: PretrainedConfig,
    *,
    seed: int,
    dtype: str = "float32",
    attention: str = "sdpa",
    trust_remote_code: bool = False,
) -> PreTrainedModel:
    """A randomly initialised causal LM of ``config``: the library's own initialisation
    under ``torch.manual_seed(seed)`` (the global generator is left as it was), so
    the same seed gives the same weights. Families without SDPA run eager.

    The weights are drawn in float32 and then cast to ``dtype``: the same seed gives
    the same weights in every dtype (rounded). Drawn in bfloat16 or float64 directly,
    they come from a different stream on some torch builds (on torch 2.11 with CUDA a
    bfloat16 build differed from the float32 one by up to 43% in the profile), so a
    dtype comparison would compare two models. ``trust_remote_code``: the config names
    custom code (``auto_map``) and the user allowed it to run.

    >>> cfg = build_config("gpt2", ModelShape(layers=2, hidden=32, heads=4))
    >>> a, b = (build_causal_lm(cfg, seed=s) for s in (0, 0))
    >>> bool((a.lm_head.weight == b.lm_head.weight).all())
    True
    """
    from transformers import AutoModelForCausalLM

    if attention == "sdpa" and not supports_sdpa(config):
        attention = "eager"
    with warnings.catch_warnings(), torch.random.fork_rng(devices=[]):
        # transformers warns about unused/generation config keys while building; not ours.
        warnings.simplefilter("ignore", UserWarning)
        torch.manual_seed(seed)
        try:
            model: Any = AutoModelForCausalLM.from_config(
                config,
                dtype=torch.float32,
                attn_implementation=attention,
                trust_remote_code=trust_remote_code,
            )
        except ValueError as err:
            first = str(err).strip().splitlines()[0]
            raise UserError(
                f"cannot build a {config.model_type} causal LM ({first[:160]})"
            ) from None
    if dtype != "float32":
        _cast_as_built(model, config, dtype, attention)
    return model


def _cast_as_built(model: Any, config: PretrainedConfig, dtype: str, attention: str) -> None:
    """Cast a float32 build to what a build in ``dtype`` would hold: every parameter in
    ``dtype``, every buffer in the dtype such a build gives it (the rotary inverse
    frequencies stay float32, Gemma's embedding scale follows the dtype), read off a
    skeleton on the meta device (no memory, no random draws)."""
    from transformers import AutoModelForCausalLM

    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore", UserWarning)
        skeleton = AutoModelForCausalLM.from_config(
            config, dtype=DTYPES[dtype], attn_implementation=attention
        )
    wanted = {name: b.dtype for name, b in skeleton.named_buffers()}
    for param in model.parameters():
        param.data = param.data.to(DTYPES[dtype])
    for name, buffer in model.named_buffers():
        if name in wanted and buffer.dtype != wanted[name]:
            buffer.data = buffer.data.to(wanted[name])
