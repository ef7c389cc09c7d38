"""What a loaded model is: the module, its adapter and the resolved facts about it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from lostmid.errors import UserError
from lostmid.models.adapters import FamilyAdapter, adapter_for_model
from lostmid.models.placement import execution_device, placed_map

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@dataclass(frozen=True)
class LoadedModel:
    """A causal LM in eval mode with frozen parameters, and what it is.

    ``max_length`` is the longest input the model accepts (its
    ``max_position_embeddings``; ALiBi models have none); ``source`` is ``preset``,
    ``directory``, ``hub`` or whatever built the module (``training``);
    ``attention`` the attention implementation the model really runs.
    """

    model: PreTrainedModel
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
    checkpoint: Mapping[str, Any] | None = None
    """The file the weights came from (a GGUF checkpoint's sha256, architecture and
    quantisation types; :meth:`lostmid.models.gguf.GGUFFile.describe`), else None."""

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
        model: PreTrainedModel,
        *,
        spec: str,
        init: str,
        seed: int,
        source: str,
        no_rope: bool = False,
        no_pos_emb: bool = False,
        no_alibi: bool = False,
        checkpoint: Mapping[str, Any] | None = None,
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
        device_map = placed_map(model)
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
            device_map=device_map,
            checkpoint=None if checkpoint is None else dict(checkpoint),
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
            "checkpoint": None if self.checkpoint is None else dict(self.checkpoint),
            "rope_bases": self.rope_bases(),
        }

    def rope_bases(self) -> list[float] | None:
        """Each layer's RoPE base (theta), layer 1 first; None without rotary embeddings.

        Gemma 3 uses two: ``rope_local_base_freq`` (or its sliding layers' entry of
        ``rope_parameters``) on sliding-window layers, ``rope_theta`` on global ones.
        """
        config = self.model.config
        params = getattr(config, "rope_parameters", None)
        types = getattr(config, "layer_types", None) or [None] * self.num_layers
        if not isinstance(params, Mapping):
            theta = getattr(config, "rope_theta", None)
            return None if theta is None else [float(theta)] * self.num_layers
        bases = []
        for kind in types:
            entry = params.get(kind) if kind in params else params
            theta = entry.get("rope_theta") if isinstance(entry, Mapping) else None
            if theta is None:
                return None
            bases.append(float(theta))
        return bases
