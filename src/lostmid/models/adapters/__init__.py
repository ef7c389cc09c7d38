"""One adapter per model family; adding a family is one small file and one line here."""

from __future__ import annotations

from lostmid.models.adapters.base import FamilyAdapter
from lostmid.models.adapters.gpt2 import GPT2Adapter
from lostmid.models.adapters.qwen2 import IdentityRotary, Qwen2Adapter

ADAPTERS: tuple[FamilyAdapter, ...] = (Qwen2Adapter(), GPT2Adapter())


def adapter_for(model_type: str) -> FamilyAdapter:
    """The adapter serving ``model_type`` (a config's ``model_type``), else the generic one."""
    for adapter in ADAPTERS:
        if model_type in adapter.model_types:
            return adapter
    return FamilyAdapter()


__all__ = [
    "ADAPTERS",
    "FamilyAdapter",
    "GPT2Adapter",
    "IdentityRotary",
    "Qwen2Adapter",
    "adapter_for",
]
