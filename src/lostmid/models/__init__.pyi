"""The names of :mod:`lostmid.models`, for type checkers and for the lazy face its
``__init__`` builds from this file (``lazy_loader.attach_stub``)."""

from .ablations import (
    freeze_norm_scale as freeze_norm_scale,
)
from .ablations import (
    remove_mlp as remove_mlp,
)
from .ablations import (
    remove_positions as remove_positions,
)
from .ablations import (
    scale_embeddings as scale_embeddings,
)
from .ablations import (
    uniform_attention as uniform_attention,
)
from .adapters import (
    ADAPTERS as ADAPTERS,
)
from .adapters import (
    FamilyAdapter as FamilyAdapter,
)
from .adapters import (
    adapter_for as adapter_for,
)
from .adapters import (
    adapter_for_model as adapter_for_model,
)
from .build import (
    ATTENTION as ATTENTION,
)
from .build import (
    BUILDABLE_FAMILIES as BUILDABLE_FAMILIES,
)
from .build import (
    DTYPES as DTYPES,
)
from .build import (
    build_causal_lm as build_causal_lm,
)
from .build import (
    build_config as build_config,
)
from .checkpoints import (
    CHECKPOINTS as CHECKPOINTS,
)
from .checkpoints import (
    RegistryCheckpoint as RegistryCheckpoint,
)
from .devices import resolve_device as resolve_device
from .gguf import (
    GGUFFile as GGUFFile,
)
from .gguf import (
    inspect_gguf as inspect_gguf,
)
from .load import (
    INITS as INITS,
)
from .load import (
    gguf_checkpoint as gguf_checkpoint,
)
from .load import (
    load_model as load_model,
)
from .load import (
    local_model_dir as local_model_dir,
)
from .loaded import LoadedModel as LoadedModel
from .placement import parse_device_map as parse_device_map
from .presets import MODEL_PRESETS as MODEL_PRESETS
from .shape import ModelShape as ModelShape
from .spec import ModelSpec as ModelSpec
