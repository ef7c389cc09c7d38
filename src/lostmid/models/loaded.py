"""What a loaded model is: the module, its adapter and the resolved facts about it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.models.adapters import FamilyAdapter, adapter_for_model
from lostmid.models.placement import device_name, execution_device


@dataclass(frozen=True)
class LoadedModel:
    """A causal LM in eval mode with frozen parameters, and what it is.

    ``max_length`` is the longest input the model accepts (its
    ``max_position_embeddings``; ALiBi models have none); ``source`` is ``preset``,
    ``directory``, ``hub`` or whatever built the module (``training``);
    ``attention`` the attention implementation the model really runs.
    """

    model: nn.Module
    adapter: FamilyAdapter
    spec: str
    family: str
    num_layers: int
    hidden_size: int
    vocab_size: int
    max_length: int
    init: str
    seed: int
    no_rope: bool
    no_pos_emb: bool
    dtype: str
    device: str
    source: str
    no_alibi: bool = False
    attention: str = "eager"
    device_map: Mapping[str, str] | None = None

    @property
    def input_device(self) -> torch.device:
        """Where input ids and embeddings go: the token embedding's execution device.

        With a ``device_map`` (accelerate) that is the device its hook computes on
        (offloaded weights live on ``meta`` and are brought there for each forward);
        otherwise the device of the model's parameters.
        """
        return execution_device(self.model.get_input_embeddings())

    @classmethod
    def from_module(
        cls,
        model: nn.Module,
        *,
        spec: str,
        init: str,
        seed: int,
        source: str,
        no_rope: bool = False,
        no_pos_emb: bool = False,
        no_alibi: bool = False,
    ) -> LoadedModel:
        """Describe a built causal LM (shared, not copied); the facts come from its
        config and parameters, the adapter from :func:`adapter_for_model`. The
        ``no_*`` flags record switches already applied; they apply nothing.

        >>> from lostmid.models import build_causal_lm, build_config, ModelShape
        >>> net = build_causal_lm(build_config("opt", ModelShape(2, 32, 4)), seed=0)
        >>> m = LoadedModel.from_module(net, spec="mine", init="random", seed=0, source="test")
        >>> m.adapter.name, m.num_layers, m.max_length
        ('opt', 2, 128)
        """
        config = model.config
        max_length = getattr(config, "max_position_embeddings", None) or getattr(
            config, "n_positions", None
        )
        param = next(model.parameters())
        device_map = getattr(model, "hf_device_map", None)
        return cls(
            model=model,
            adapter=adapter_for_model(model),
            spec=spec,
            family=str(config.model_type),
            num_layers=int(config.num_hidden_layers),
            hidden_size=int(config.hidden_size),
            vocab_size=int(config.vocab_size),
            max_length=int(max_length) if max_length else 1 << 30,
            init=init,
            seed=seed,
            no_rope=no_rope,
            no_pos_emb=no_pos_emb,
            dtype=str(param.dtype).removeprefix("torch."),
            device=str(param.device)
            if device_map is None
            else str(execution_device(model.get_input_embeddings())),
            source=source,
            no_alibi=no_alibi,
            attention=str(getattr(config, "_attn_implementation", None) or "eager"),
            device_map=None
            if device_map is None
            else {name: device_name(dev) for name, dev in device_map.items()},
        )

    def check_length(self, length: int) -> int:
        """``length`` if the model takes inputs that long, else the one line that says so
        (the one check of a length against a model, wherever a length enters)."""
        if length > self.max_length:
            raise UserError(
                f"--length {length} exceeds the maximum {self.max_length} of {self.spec}; "
                f"use --length {self.max_length} or less"
            )
        return length

    def describe(self) -> dict[str, Any]:
        """The resolved facts about the model, for result files."""
        return {
            "model": self.spec,
            "family": self.family,
            "adapter": self.adapter.name,
            "source": self.source,
            "layers": self.num_layers,
            "hidden": self.hidden_size,
            "vocab": self.vocab_size,
            "max_length": self.max_length,
            "init": self.init,
            "seed": self.seed,
            "no_rope": self.no_rope,
            "no_pos_emb": self.no_pos_emb,
            "no_alibi": self.no_alibi,
            "attention": self.attention,
            "dtype": self.dtype,
            "device": self.device,
            "device_map": None if self.device_map is None else dict(self.device_map),
        }
