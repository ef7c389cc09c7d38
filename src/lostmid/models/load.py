"""Build or load a Hugging Face causal LM from a preset, a local directory or a hub id.

``init="random"`` builds the untrained model from the config with the library's own
initialisation under ``torch.manual_seed(seed)``: several seeds give several
independent models. ``init="pretrained"`` loads weights (a local directory with
weights, or a hub id already in the cache); ``init="auto"`` loads weights when there
are some and builds a random model otherwise.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.models.adapters import FamilyAdapter, adapter_for_model
from lostmid.models.build import ATTENTION, DTYPES, build_causal_lm, supports_sdpa
from lostmid.models.devices import resolve_device
from lostmid.models.presets import MODEL_PRESETS

INITS = ("random", "pretrained", "auto")
_WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "model*.bin")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


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
            device=str(param.device),
            source=source,
            no_alibi=no_alibi,
            attention=str(getattr(config, "_attn_implementation", None) or "eager"),
        )

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
        }


def _check_device(device: str) -> torch.device:
    """Deprecated private alias kept for callers outside models; use :func:`resolve_device`."""
    return torch.device(resolve_device(device))


def _has_weights(folder: Path) -> bool:
    return any(any(folder.glob(pattern)) for pattern in _WEIGHT_PATTERNS)


def _offline() -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in {"1", "true", "yes", "on"}:
        return True
    try:
        from huggingface_hub import constants

        return bool(constants.HF_HUB_OFFLINE)
    except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
        return False


def _preset_config(name: str) -> Any:
    from transformers import AutoConfig

    kwargs = {k: v for k, v in MODEL_PRESETS[name].items() if not k.startswith("_")}
    return AutoConfig.for_model(kwargs.pop("model_type"), **kwargs)


def _resolve(spec: str) -> tuple[str, Any, str | None]:
    """(source, config, weights_location or None) for a model spec."""
    from transformers import AutoConfig

    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise UserError(f"--model {spec}: a file; give a directory holding config.json")
        if not (path / "config.json").is_file():
            raise UserError(f"--model {spec}: no config.json in that directory")
        try:
            config = AutoConfig.from_pretrained(path)
        except (OSError, ValueError, KeyError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise UserError(f"--model {spec}: cannot read config.json ({first})") from None
        return "directory", config, str(path) if _has_weights(path) else None
    if spec in MODEL_PRESETS:
        return "preset", _preset_config(spec), None
    presets = ", ".join(MODEL_PRESETS)
    if spec.startswith(("/", "./", "../", "~")) or spec.endswith("/") or os.sep + os.sep in spec:
        raise UserError(
            f"--model {spec}: no such directory; give an existing path or a preset ({presets})"
        )
    if not _HUB_ID.fullmatch(spec):
        raise UserError(
            f"unknown model preset {spec!r}; presets: {presets} (or a directory or hub id)"
        )
    offline = _offline()
    try:
        config = AutoConfig.from_pretrained(spec, local_files_only=True)
    except (OSError, ValueError):
        config = None
    if config is None:
        if offline:
            raise UserError(
                f"--model {spec}: not in the local Hugging Face cache and the hub is offline "
                f"(HF_HUB_OFFLINE); download it first or use a preset ({presets})"
            )
        try:
            config = AutoConfig.from_pretrained(spec)
        except (OSError, ValueError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise UserError(
                f"--model {spec}: not cached and could not be fetched ({first[:160]}); "
                f"use a preset ({presets}) or a local directory"
            ) from None
    return "hub", config, spec


def _apply_overrides(config: Any, overrides: dict[str, Any] | None) -> Any:
    """A new config with ``overrides`` applied; derived per-layer lists are rebuilt."""
    if not overrides:
        return config
    for key in overrides:
        if not hasattr(config, key):
            raise UserError(
                f"config override {key!r} is not a field of the {config.model_type} config"
            )
    fields = config.to_dict()
    if "num_hidden_layers" in overrides and "layer_types" not in overrides:
        fields.pop("layer_types", None)  # one entry per layer: let the config rebuild it
    fields.update(overrides)
    return type(config).from_dict(fields)


def load_model(
    spec: str,
    *,
    init: str = "random",
    seed: int = 0,
    no_rope: bool = False,
    no_pos_emb: bool = False,
    no_alibi: bool = False,
    dtype: str = "float32",
    device: str = "cpu",
    config_overrides: dict[str, Any] | None = None,
    attn_implementation: str = "sdpa",
) -> LoadedModel:
    """A causal LM ready for measurement: eval mode, parameters frozen.

    Args:
        spec: a preset name (see ``MODEL_PRESETS``), a local directory (weights loaded
            when ``init`` allows, else built from its config.json) or a cached hub id.
        init: ``random`` (library initialisation under ``seed``), ``pretrained``
            (weights required) or ``auto`` (weights if present).
        no_rope: make rotary embeddings the identity (families with rotary only).
        no_pos_emb: zero the learned absolute position embeddings (GPT-2, OPT).
        no_alibi: remove the ALiBi attention biases (BLOOM).
        dtype: ``float32`` (default), ``float64``, ``bfloat16`` or ``float16``.
        device: ``cpu``, ``cuda[:N]`` or ``auto`` (see :func:`resolve_device`).
        config_overrides: config fields to change before building, e.g.
            ``{"num_hidden_layers": 4}``; unknown fields are an error.
        attn_implementation: ``sdpa`` (memory O(L) per layer with a causal kernel)
            or ``eager`` (explicit attention matrix). Families without an SDPA kernel
            (BLOOM, Gemma2) run eager; ``LoadedModel.attention`` says which ran.

    >>> m = load_model("tiny-qwen2", seed=1)
    >>> (m.family, m.num_layers, m.hidden_size, m.max_length)
    ('qwen2', 2, 32, 256)
    """
    if init not in INITS:
        raise UserError(f"--init {init!r} unknown; choose one of {', '.join(INITS)}")
    if dtype not in DTYPES:
        raise UserError(f"--dtype {dtype!r} unknown; choose one of {', '.join(DTYPES)}")
    if attn_implementation not in ATTENTION:
        raise UserError(f"attention {attn_implementation!r} unknown; choose {', '.join(ATTENTION)}")
    dev = resolve_device(device)
    source, config, weights = _resolve(spec)
    config = _apply_overrides(config, config_overrides)
    if init == "pretrained" and weights is None:
        what = "a preset holds only the architecture" if source == "preset" else "no weights found"
        raise UserError(f"--init pretrained for {spec}: {what}; use --init random")
    use_weights = weights is not None and init in ("pretrained", "auto")
    if attn_implementation == "sdpa" and not supports_sdpa(config):
        attn_implementation = "eager"

    if use_weights:
        from transformers import AutoModelForCausalLM

        with warnings.catch_warnings():
            # transformers warns about unused/generation config keys while loading; not ours.
            warnings.simplefilter("ignore", UserWarning)
            try:
                model = AutoModelForCausalLM.from_pretrained(
                    weights,
                    config=config,
                    dtype=DTYPES[dtype],
                    attn_implementation=attn_implementation,
                    local_files_only=_offline() or source == "directory",
                )
            except OSError as err:
                first = str(err).strip().splitlines()[0]
                raise UserError(f"--model {spec}: cannot load weights ({first[:160]})") from None
    else:
        try:
            model = build_causal_lm(config, seed=seed, dtype=dtype, attention=attn_implementation)
        except UserError as err:
            raise UserError(f"--model {spec}: {err}") from None
    model = model.to(dev).eval()
    for param in model.parameters():
        param.requires_grad_(False)
    loaded = LoadedModel.from_module(
        model,
        spec=spec,
        init="pretrained" if use_weights else "random",
        seed=seed,
        source=source,
        no_rope=no_rope,
        no_pos_emb=no_pos_emb,
        no_alibi=no_alibi,
    )
    # A family without the encoding raises its own one-line message.
    if no_rope:
        loaded.adapter.remove_rope(model)
    if no_pos_emb:
        loaded.adapter.remove_position_embedding(model)
    if no_alibi:
        loaded.adapter.remove_alibi(model)
    return loaded
