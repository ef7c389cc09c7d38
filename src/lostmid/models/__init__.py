"""Hugging Face causal LMs for measurement: presets, building, loading, adapters, ablations.

>>> from lostmid.models import load_model
>>> loaded = load_model("tiny-gpt2", no_pos_emb=True)
>>> loaded.adapter.name, loaded.num_layers
('gpt2', 2)
>>> gemma = load_model("tiny-gemma2")  # local (W = 16) and global layers alternate
>>> gemma.adapter.layer_masks(gemma.model.config, 64)
['sliding:16', 'causal']
"""

from lostmid.attention_choice import EAGER_MAX_LENGTH
from lostmid.attention_choice import attention_for as attention_for_length
from lostmid.files import cache_root
from lostmid.models.ablations import (
    freeze_norm_scale,
    remove_mlp,
    remove_positions,
    scale_embeddings,
    uniform_attention,
)
from lostmid.models.adapters import ADAPTERS, FamilyAdapter, adapter_for, adapter_for_model
from lostmid.models.build import (
    ATTENTION,
    BUILDABLE_FAMILIES,
    DTYPES,
    build_causal_lm,
    build_config,
)
from lostmid.models.checkpoints import CHECKPOINTS, RegistryCheckpoint
from lostmid.models.devices import resolve_device
from lostmid.models.gguf import GGUFFile, inspect_gguf
from lostmid.models.load import INITS, gguf_checkpoint, load_model, local_model_dir
from lostmid.models.loaded import LoadedModel
from lostmid.models.placement import parse_device_map
from lostmid.models.presets import MODEL_PRESETS
from lostmid.models.shape import ModelShape

__all__ = [
    "ADAPTERS",
    "ATTENTION",
    "BUILDABLE_FAMILIES",
    "CHECKPOINTS",
    "DTYPES",
    "EAGER_MAX_LENGTH",
    "INITS",
    "MODEL_PRESETS",
    "FamilyAdapter",
    "GGUFFile",
    "LoadedModel",
    "ModelShape",
    "RegistryCheckpoint",
    "adapter_for",
    "adapter_for_model",
    "attention_for_length",
    "build_causal_lm",
    "build_config",
    "cache_root",
    "freeze_norm_scale",
    "gguf_checkpoint",
    "inspect_gguf",
    "load_model",
    "local_model_dir",
    "parse_device_map",
    "remove_mlp",
    "remove_positions",
    "resolve_device",
    "scale_embeddings",
    "uniform_attention",
]
