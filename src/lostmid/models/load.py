"""Build or load a Hugging Face causal LM from a preset, a local directory or a hub id.

``init="random"`` builds the untrained model from the config with the library's own
initialisation under ``torch.manual_seed(seed)``: several seeds give several
independent models. ``init="pretrained"`` loads weights (a local directory with
weights, or a hub id already in the cache); ``init="auto"`` loads weights when there
are some and builds a random model otherwise.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
import warnings
import weakref
from collections.abc import Mapping
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
    device_map: Mapping[str, str] | None = None

    @property
    def input_device(self) -> torch.device:
        """Where input ids and embeddings go: the token embedding's execution device.

        With a ``device_map`` (accelerate) that is the device its hook computes on
        (offloaded weights live on ``meta`` and are brought there for each forward);
        otherwise the device of the model's parameters.
        """
        return _execution_device(self.model.get_input_embeddings())

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
            else str(_execution_device(model.get_input_embeddings())),
            source=source,
            no_alibi=no_alibi,
            attention=str(getattr(config, "_attn_implementation", None) or "eager"),
            device_map=None
            if device_map is None
            else {name: _device_name(dev) for name, dev in device_map.items()},
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
            "device_map": None if self.device_map is None else dict(self.device_map),
        }


DEVICE_MAP_PLANS = ("auto", "balanced")
_ACCELERATE_HINT = "pip install 'lostmid[big]' (or pip install accelerate)"


def parse_device_map(spec: str | Mapping[str, Any]) -> str | dict[str, int | str]:
    """``auto``, ``balanced`` or a {module name: device} map, from text or a mapping.

    Devices are a GPU index, ``cuda`` / ``cuda:N`` (read as the index), ``cpu`` or
    ``disk``; module names are checked against the model when it is built
    (:func:`load_model`). One-line errors.

    >>> parse_device_map("balanced")
    'balanced'
    >>> parse_device_map('{"model.embed_tokens": "cuda:1", "model.layers": "cpu", "lm_head": 0}')
    {'model.embed_tokens': 1, 'model.layers': 'cpu', 'lm_head': 0}
    >>> parse_device_map("[0, 1]")
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: --device-map wants auto, balanced or JSON {module: device}; got a list
    """
    if isinstance(spec, str):
        if spec in DEVICE_MAP_PLANS:
            return spec
        try:
            parsed = json.loads(spec)
        except json.JSONDecodeError:
            raise UserError(
                f"--device-map {spec[:60]!r} is neither auto, balanced nor JSON; "
                'give e.g. \'{"model.layers": 0, "lm_head": "cpu"}\''
            ) from None
    else:
        parsed = spec
    if not isinstance(parsed, Mapping) or not parsed:
        kind = "an empty object" if isinstance(parsed, Mapping) else f"a {_json_kind(parsed)}"
        raise UserError(f"--device-map wants auto, balanced or JSON {{module: device}}; got {kind}")
    return {str(name): _map_device(str(name), device) for name, device in parsed.items()}


def _json_kind(value: Any) -> str:
    kinds = {list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return kinds.get(type(value), type(value).__name__)


def _map_device(name: str, device: Any) -> int | str:
    """One device of a map as accelerate takes it: a GPU index, ``cpu`` or ``disk``."""
    if isinstance(device, int) and not isinstance(device, bool) and device >= 0:
        return device
    if isinstance(device, str):
        if device in ("cpu", "disk"):
            return device
        if device == "cuda":
            return 0
        match = re.fullmatch(r"cuda:(\d+)", device)
        if match:
            return int(match.group(1))
    raise UserError(
        f"--device-map puts {name or '(the whole model)'} on {device!r}, not a device; "
        "use a GPU index, cuda:N, cpu or disk"
    )


def _device_name(device: int | str | torch.device) -> str:
    """A map's device as text: GPU index 1 -> ``cuda:1``; ``cpu`` and ``disk`` as they are."""
    return f"cuda:{device}" if isinstance(device, int) else str(device)


def _execution_device(module: nn.Module) -> torch.device:
    """The device ``module`` computes on: its accelerate hook's, else its parameters'."""
    hook = getattr(module, "_hf_hook", None)
    for part in [hook, *getattr(hook, "hooks", ())]:
        device = getattr(part, "execution_device", None)
        if device is not None:
            return torch.device(_device_name(device))
    for param in module.parameters():
        if param.device.type != "meta":
            return param.device
    return torch.device("cpu")


def _require_accelerate() -> None:
    try:
        import accelerate  # noqa: F401
    except ImportError:
        raise UserError(
            f"--device-map needs accelerate, which is not installed: {_ACCELERATE_HINT}"
        ) from None


def _check_gpus(device_map: Mapping[str, int | str]) -> None:
    """Every GPU a map names exists on this machine."""
    for name, device in device_map.items():
        if not isinstance(device, int):
            continue
        if not torch.cuda.is_available():
            raise UserError(
                f"--device-map puts {name or '(the whole model)'} on cuda:{device} but CUDA is "
                "not available on this machine; use cpu or disk (or --device-map auto)"
            )
        if device >= torch.cuda.device_count():
            raise UserError(
                f"--device-map puts {name or '(the whole model)'} on cuda:{device}: only "
                f"{torch.cuda.device_count()} GPU(s) here"
            )


def _resolve_device_map(
    model: nn.Module,
    plan: str | Mapping[str, int | str],
    max_memory: Mapping[int | str, int | str] | None,
    spec: str,
) -> dict[str, int | str]:
    """The {module: device} map for ``model``: accelerate's plan, or the user's checked."""
    from accelerate import infer_auto_device_map
    from accelerate.utils import check_device_map, get_balanced_memory

    dtype = next(model.parameters()).dtype
    no_split = list(getattr(model, "_no_split_modules", None) or [])
    memory = None
    if max_memory is not None:
        memory = {int(k) if str(k).isdigit() else str(k): v for k, v in max_memory.items()}
    if isinstance(plan, str):
        if plan == "balanced":
            memory = get_balanced_memory(
                model, max_memory=memory, no_split_module_classes=no_split, dtype=dtype
            )
        resolved = dict(
            infer_auto_device_map(
                model, max_memory=memory, no_split_module_classes=no_split, dtype=dtype
            )
        )
    else:
        names = {name for name, _ in model.named_modules()}
        unknown = [name for name in plan if name not in names]
        if unknown:
            tops = ", ".join(repr(name) for name, _ in model.named_children())
            raise UserError(
                f"--device-map names {unknown[0]!r}, not a module of {spec}; "
                f"use module names such as {tops} or '' for the whole model"
            )
        try:
            check_device_map(model, dict(plan))
        except ValueError as err:
            missing = str(err).split(":")[-1].strip().split(",")[0]
            raise UserError(
                f"--device-map gives no device to some parameters (first: {missing}); "
                'map every module, e.g. add "": "cpu" for the rest'
            ) from None
        resolved = _flatten_map(model, plan)
    _check_gpus(resolved)
    if set(resolved.values()) == {"disk"}:
        raise UserError(
            "--device-map puts the whole model on disk; keep at least the embeddings on a "
            "device (a larger max_memory, or a map with cpu or a GPU)"
        )
    return resolved


def _flatten_map(model: nn.Module, device_map: Mapping[str, int | str]) -> dict[str, int | str]:
    """The same placement with no key inside another (accelerate's hooks need that).

    A module whose descendants have their own entries is replaced by its children (and
    its own parameters), which inherit its device.

    >>> net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
    >>> _flatten_map(net, {"": "cpu", "1.0": "disk"})
    {'0': 'cpu', '1.0': 'disk', '1.1': 'cpu'}
    """
    flat: dict[str, int | str] = {}

    def visit(name: str, module: nn.Module, inherited: int | str | None) -> None:
        device = device_map.get(name, inherited)
        prefix = f"{name}." if name else ""
        if not any(key != name and key.startswith(prefix) for key in device_map):
            if device is not None:
                flat[name] = device
            return
        if device is not None:
            for tensor, _ in [
                *module.named_parameters(recurse=False),
                *module.named_buffers(recurse=False),
            ]:
                flat[prefix + tensor] = device
        for child, submodule in module.named_children():
            visit(prefix + child, submodule, device)

    visit("", model, None)
    return flat


def _main_device(device_map: Mapping[str, int | str], first: str) -> int | str:
    """Where offloaded modules compute: the first module's GPU, else any GPU, else cpu."""
    if isinstance(device_map.get(first), int):
        return device_map[first]
    gpus = [device for device in device_map.values() if isinstance(device, int)]
    return min(gpus) if gpus else "cpu"


def _offload_folder(device_map: Mapping[str, int | str], folder: str | Path | None) -> str | None:
    """The folder for ``disk`` entries: the caller's, or a new temporary one (None: no disk)."""
    if "disk" not in device_map.values():
        return None
    if folder is not None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return str(folder)
    return tempfile.mkdtemp(prefix="lostmid-offload-")


def _dispatch(
    model: nn.Module,
    plan: str | Mapping[str, int | str],
    max_memory: Mapping[int | str, int | str] | None,
    offload_folder: str | Path | None,
    spec: str,
) -> nn.Module:
    """Split or offload a built model over devices with accelerate's hooks."""
    from accelerate import dispatch_model

    device_map = _resolve_device_map(model, plan, max_memory, spec)
    folder = _offload_folder(device_map, offload_folder)
    embed_name = next(
        name for name, module in model.named_modules() if module is model.get_input_embeddings()
    )
    owners = [k for k in device_map if k in ("", embed_name) or embed_name.startswith(k + ".")]
    first = max(owners, key=len, default="")
    model = dispatch_model(
        model,
        device_map=device_map,
        main_device=_main_device(device_map, first),
        offload_dir=folder,
    )
    if folder is not None and offload_folder is None:
        weakref.finalize(model, shutil.rmtree, folder, True)
    return model


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
    device_map: str | Mapping[str, int | str] | None = None,
    max_memory: Mapping[int | str, int | str] | None = None,
    offload_folder: str | Path | None = None,
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
        device_map: split the model across devices or offload it, through accelerate:
            ``auto`` (fill the GPUs in order, then cpu, then disk), ``balanced`` (the same
            load on every GPU) or a {module name: device} map (JSON text or a mapping;
            :func:`parse_device_map`). ``device`` is then only checked, not used: the
            inputs go to ``LoadedModel.input_device`` and gradients flow through every
            device. Weights offloaded to ``disk`` are written to ``offload_folder`` (a
            temporary folder, removed with the model, when None).
        max_memory: the most each device may hold, e.g. ``{0: "70GiB", "cpu": "200GiB"}``
            (accelerate's format); with ``auto``/``balanced`` what does not fit goes to
            the next device, then to disk.

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
    plan = None if device_map is None else parse_device_map(device_map)
    if plan is not None:
        _require_accelerate()
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

        placement: dict[str, Any] = {}
        if plan is not None:  # plan on an empty skeleton; weights load straight to place
            from accelerate import init_empty_weights

            with init_empty_weights():
                skeleton = AutoModelForCausalLM.from_config(
                    config, dtype=DTYPES[dtype], attn_implementation=attn_implementation
                )
            resolved = _resolve_device_map(skeleton, plan, max_memory, spec)
            folder = _offload_folder(resolved, offload_folder)
            placement = {"device_map": resolved, "offload_folder": folder}
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
                    **placement,
                )
            except OSError as err:
                first = str(err).strip().splitlines()[0]
                raise UserError(f"--model {spec}: cannot load weights ({first[:160]})") from None
        if placement.get("offload_folder") and offload_folder is None:
            weakref.finalize(model, shutil.rmtree, placement["offload_folder"], True)
    else:
        try:
            model = build_causal_lm(config, seed=seed, dtype=dtype, attention=attn_implementation)
        except UserError as err:
            raise UserError(f"--model {spec}: {err}") from None
    if plan is None:
        model = model.to(dev)
    model = model.eval()
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
        if any(p.device.type == "meta" for p in model.parameters()):
            raise UserError(
                "--no-pos-emb cannot zero offloaded weights; give a --device-map without "
                "cpu or disk offload, or --init random"
            )
        loaded.adapter.remove_position_embedding(model)
    if no_alibi:
        loaded.adapter.remove_alibi(model)
    if plan is not None and not use_weights:  # built here: ablate first, then dispatch
        model = _dispatch(model, plan, max_memory, offload_folder, spec)
        loaded = dataclasses.replace(
            loaded,
            device=str(_execution_device(model.get_input_embeddings())),
            device_map={n: _device_name(d) for n, d in model.hf_device_map.items()},
        )
    return loaded
