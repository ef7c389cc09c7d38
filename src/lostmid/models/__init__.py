"""Hugging Face causal LMs for measurement: presets, loading, one adapter per family.

>>> from lostmid.models import load_model
>>> loaded = load_model("tiny-gpt2", no_pos_emb=True)
>>> loaded.adapter.name, loaded.num_layers
('gpt2', 2)
"""

from lostmid.models.adapters import ADAPTERS, FamilyAdapter, adapter_for
from lostmid.models.load import ATTENTION, DTYPES, INITS, LoadedModel, load_model
from lostmid.models.presets import PRESETS

__all__ = [
    "ADAPTERS",
    "ATTENTION",
    "DTYPES",
    "INITS",
    "PRESETS",
    "FamilyAdapter",
    "LoadedModel",
    "adapter_for",
    "load_model",
]
