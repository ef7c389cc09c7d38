"""Hugging Face causal LMs for measurement: presets, building, loading, adapters, ablations.

>>> from lostmid.models import load_model
>>> loaded = load_model("tiny-gpt2", no_pos_emb=True)
>>> loaded.adapter.name, loaded.num_layers
('gpt2', 2)
>>> gemma = load_model("tiny-gemma2")  # local (W = 16) and global layers alternate
>>> gemma.adapter.layer_masks(gemma.model.config, 64)
['sliding:16', 'causal']
"""

from typing import TYPE_CHECKING

from lostmid.attention_choice import EAGER_MAX_LENGTH as EAGER_MAX_LENGTH
from lostmid.attention_choice import attention_for as attention_for_length  # noqa: F401
from lostmid.files import cache_root as cache_root
from lostmid.lazy import attach

# The names below load torch and transformers on first use, not on import, so that a
# torch-free module (a config, lostmid.models.spec) can live here and `lostmid --help`
# answers at once (lostmid.lazy). Type checkers read the same names here, in the map's
# order, one statement per module (isort off; tests/test_lazy.py keeps the two in step).
if TYPE_CHECKING:
    # isort: off
    from lostmid.models.ablations import (
        freeze_norm_scale as freeze_norm_scale,
        remove_mlp as remove_mlp,
        remove_positions as remove_positions,
        scale_embeddings as scale_embeddings,
        uniform_attention as uniform_attention,
    )
    from lostmid.models.adapters import (
        ADAPTERS as ADAPTERS,
        FamilyAdapter as FamilyAdapter,
        adapter_for as adapter_for,
        adapter_for_model as adapter_for_model,
    )
    from lostmid.models.build import (
        ATTENTION as ATTENTION,
        BUILDABLE_FAMILIES as BUILDABLE_FAMILIES,
        DTYPES as DTYPES,
        build_causal_lm as build_causal_lm,
        build_config as build_config,
    )
    from lostmid.models.checkpoints import (
        CHECKPOINTS as CHECKPOINTS,
        RegistryCheckpoint as RegistryCheckpoint,
    )
    from lostmid.models.devices import resolve_device as resolve_device
    from lostmid.models.gguf import (
        GGUFFile as GGUFFile,
        inspect_gguf as inspect_gguf,
    )
    from lostmid.models.load import (
        INITS as INITS,
        gguf_checkpoint as gguf_checkpoint,
        load_model as load_model,
        local_model_dir as local_model_dir,
    )
    from lostmid.models.loaded import LoadedModel as LoadedModel
    from lostmid.models.placement import parse_device_map as parse_device_map
    from lostmid.models.presets import MODEL_PRESETS as MODEL_PRESETS
    from lostmid.models.shape import ModelShape as ModelShape
    from lostmid.models.spec import ModelSpec as ModelSpec
    # isort: on

__getattr__, __dir__, _lazy = attach(
    __name__,
    {
        "ablations": [
            "freeze_norm_scale",
            "remove_mlp",
            "remove_positions",
            "scale_embeddings",
            "uniform_attention",
        ],
        "adapters": ["ADAPTERS", "FamilyAdapter", "adapter_for", "adapter_for_model"],
        "build": ["ATTENTION", "BUILDABLE_FAMILIES", "DTYPES", "build_causal_lm", "build_config"],
        "checkpoints": ["CHECKPOINTS", "RegistryCheckpoint"],
        "devices": ["resolve_device"],
        "gguf": ["GGUFFile", "inspect_gguf"],
        "load": ["INITS", "gguf_checkpoint", "load_model", "local_model_dir"],
        "loaded": ["LoadedModel"],
        "placement": ["parse_device_map"],
        "presets": ["MODEL_PRESETS"],
        "shape": ["ModelShape"],
        "spec": ["ModelSpec"],
    },
)
__all__ = sorted([*_lazy, "EAGER_MAX_LENGTH", "attention_for_length", "cache_root"])
