"""Build or load a Hugging Face causal LM from a preset, a local directory or a hub id.

``init="random"`` builds the untrained model from the config with the library's own
initialisation under ``torch.manual_seed(seed)``: several seeds give several
independent models. ``init="pretrained"`` loads weights (a local directory with
weights, or a hub id already in the cache); ``init="auto"`` loads weights when there
are some and builds a random model otherwise.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import warnings
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lostmid.checks import check_choice
from lostmid.errors import UserError
from lostmid.files import (
    config_errors,
    load_weights,
    model_config,
    quiet_transformers,
    weight_files,
)
from lostmid.models.build import ATTENTION, DTYPES, build_causal_lm, supports_sdpa
from lostmid.models.checkpoints import CHECKPOINTS, RegistryCheckpoint
from lostmid.models.devices import resolve_device
from lostmid.models.gguf import dequantised_dir, find_gguf, inspect_gguf, is_gguf
from lostmid.models.identity import registry_by_sha256
from lostmid.models.loaded import LoadedModel
from lostmid.models.placement import (
    dispatch,
    execution_device,
    offload_folder_for,
    parse_device_map,
    placed_map,
    require_accelerate,
    resolve_device_map,
)
from lostmid.models.presets import MODEL_PRESETS

if TYPE_CHECKING:
    from transformers import PreTrainedModel

INITS = ("random", "pretrained", "auto")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def _has_weights(folder: Path) -> bool:
    return bool(weight_files(folder))


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


def gguf_checkpoint(spec: str) -> tuple[Path, dict[str, Any]] | None:
    """(dequantised directory, the file's record) when ``spec`` names a GGUF checkpoint:
    a checkpoint preset (:data:`CHECKPOINTS`), a ``.gguf`` file, or a folder holding one
    ``.gguf`` file and no ``config.json``; None for any other spec.

    The first call for a file dequantises it into the cache (:func:`dequantised_dir`);
    later calls read the cache. A preset's file is checked against its sha256.
    """
    preset = CHECKPOINTS.get(spec)
    path = Path(spec).expanduser()
    if preset is not None:
        file = preset.locate()
    elif path.is_file() and (path.suffix.lower() == ".gguf" or is_gguf(path)):
        file = path
    elif path.is_dir():
        found = find_gguf(path)
        if found is None:
            return None
        file = found
    else:
        return None
    gguf = inspect_gguf(file)
    if preset is not None:
        preset.check(gguf.sha256)
    preset = preset or registry_by_sha256(gguf.sha256)  # the registry's file by its path
    record = gguf.describe()
    if preset is not None:
        record = {"preset": preset.name, "licence": preset.licence, **record}
    return dequantised_dir(gguf), record


INIT_FACTS = ("initializer_range",)
"""Configuration fields a random-init twin reads that a GGUF file does not carry."""


def _init_facts(preset: RegistryCheckpoint | None, config: Any) -> dict[str, dict[str, Any]]:
    """Set a registry checkpoint's published init facts on ``config`` (a GGUF file lacks
    them; transformers would use its defaults) and say, for each fact the twin reads,
    its value and where it came from (recorded with the run). The checkpoint is known
    by its bytes: its file by any path gets the same facts as its name."""
    facts = {}
    for name in INIT_FACTS:
        if preset is not None and name in preset.published:
            setattr(config, name, preset.published[name])
            source = preset.published_source
        else:
            source = "transformers' default (the file does not carry it)"
        facts[name] = {"value": getattr(config, name, None), "from": source}
    return facts


def local_model_dir(spec: str) -> Path | None:
    """The local directory that holds ``spec``'s files (config, tokenizer), if any: the
    directory itself, or the dequantised folder of a GGUF checkpoint."""
    found = gguf_checkpoint(spec)
    if found is not None:
        return found[0]
    path = Path(spec).expanduser()
    return path if path.is_dir() else None


def _resolve(
    spec: str, trust_remote_code: bool = False
) -> tuple[str, Any, str | None, dict[str, Any] | None]:
    """(source, config, weights_location or None, checkpoint record or None) for a model
    spec; the config is read without running code from the model
    (:func:`lostmid.files.model_config`)."""
    from transformers import AutoConfig

    found = gguf_checkpoint(spec)
    if found is not None:
        folder, record = found
        config = model_config(folder, trust_remote_code=False)
        preset = CHECKPOINTS.get(str(record.get("preset")))
        facts = _init_facts(preset, config)
        return "gguf", config, str(folder), {**record, "init_facts": facts}
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise UserError(
                f"--model {spec}: a file that is not GGUF; give a .gguf file or a directory "
                "holding config.json"
            )
        config = model_config(path, trust_remote_code=trust_remote_code)
        return "directory", config, str(path) if _has_weights(path) else None, None
    if spec in MODEL_PRESETS:
        return "preset", _preset_config(spec), None, None
    presets = ", ".join([*MODEL_PRESETS, *CHECKPOINTS])
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
        with quiet_transformers():  # a cached hub id: its files, read like a directory's
            config = AutoConfig.from_pretrained(
                spec, local_files_only=True, trust_remote_code=trust_remote_code
            )
    except (OSError, ValueError):
        config = None
    if config is None:
        if offline:
            raise UserError(
                f"--model {spec}: not in the local Hugging Face cache and the hub is offline "
                f"(HF_HUB_OFFLINE); download it first or use a preset ({presets})"
            )
        try:
            with quiet_transformers():
                config = AutoConfig.from_pretrained(spec, trust_remote_code=trust_remote_code)
        except (OSError, ValueError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise UserError(
                f"--model {spec}: not cached and could not be fetched ({first[:160]}); "
                f"use a preset ({presets}) or a local directory"
            ) from None
    if getattr(config, "auto_map", None) and not trust_remote_code:
        raise UserError(
            f"--model {spec}: its config names custom code ({config.auto_map}); lostmid runs "
            "no code from a model unless you pass --trust-remote-code (only for code you "
            "have read)"
        )
    return "hub", config, spec, None


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
    try:
        return type(config).from_dict(fields)
    except config_errors() as err:
        text = " ".join(str(err).split())[:200]
        raise UserError(f"transformers rejects the config with {overrides} ({text})") from None


def check_model_shape(config: Any, spec: str) -> None:
    """One line for a config that transformers accepts but no model of it can run:
    a dimension below 1, a hidden size the attention heads do not divide (without an
    explicit ``head_dim``), key-value heads that do not divide the heads."""
    from lostmid.models.budget import shape_of

    shape = shape_of(config)
    for name in ("layers", "hidden", "heads", "vocab"):
        if shape[name] < 1:
            raise UserError(f"--model {spec}: its config has {name} = {shape[name]}; need >= 1")
    heads = shape["heads"]
    if getattr(config, "head_dim", None) is None and shape["hidden"] % heads:
        raise UserError(
            f"--model {spec}: hidden size {shape['hidden']} is not a multiple of its "
            f"{heads} attention heads; fix the config"
        )
    kv = getattr(config, "num_key_value_heads", None)
    if isinstance(kv, int) and (kv < 1 or heads % kv):
        raise UserError(
            f"--model {spec}: {kv} key-value heads do not divide its {heads} attention heads; "
            "fix the config"
        )


def check_model_memory(config: Any, spec: str, dtype: str, available: float | None = None) -> None:
    """Refuse, before anything is allocated, a model whose weights alone exceed this
    machine's free memory (:func:`lostmid.runs.budget.check_budget`; parameters from
    the config, :func:`lostmid.models.budget.parameter_count`)."""
    from lostmid.models.budget import dtype_bytes, parameter_count
    from lostmid.runs.budget import check_budget

    weights = parameter_count(config) * dtype_bytes(dtype)
    check_budget(
        f"--model {spec} ({parameter_count(config):,} parameters, {dtype})",
        need_bytes=weights,
        available=available,
    )


def check_trained_model(
    spec: str,
    length: int,
    *,
    layout: bool = False,
    dtype: str = "float32",
    option: str = "--model",
    trust_remote_code: bool = False,
) -> dict[str, Any]:
    """Refuse in one line, before any compute, a model a trained-model study cannot use
    at ``length`` tokens: no weights (a preset, a folder with only config.json), a config
    no model of it can run, weights larger than the free memory (with the estimate), a
    context shorter than ``length``, or (``layout``: for a study that hooks attention or
    embeddings) an architecture no family adapter reads, checked on a one-layer model
    built from its config (a fraction of a second). ``trust_remote_code``: a config
    naming custom code may run it (``--trust-remote-code``). Returns the model's size
    facts.

    >>> check_trained_model("tiny-gpt2", 64)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    lostmid.errors.UserError: --model tiny-gpt2: a preset holds only the architecture; ...
    """
    from lostmid.models.budget import parameter_count, shape_of

    source, config, weights, _ = _resolve(spec, trust_remote_code)
    if weights is None:
        what = "a preset holds only the architecture" if source == "preset" else "no weights"
        raise UserError(
            f"{option} {spec}: {what}; a trained-model study needs weights (a folder with "
            "them, a .gguf file or a cached hub id)"
        )
    check_model_shape(config, spec)
    check_model_memory(config, spec, dtype)
    if source == "directory":  # a damaged or pickled weight file: now, not in a stage
        from lostmid.files import check_weight_files

        check_weight_files(Path(weights), option)
    shape = shape_of(config)
    positions = shape["positions"]
    if positions and positions < length:
        raise UserError(
            f"{option} {spec}: its context is {positions} tokens, shorter than the {length} "
            "this scale's studies read; choose a smaller scale"
        )
    if layout:
        from lostmid.models.adapters import FamilyAdapter

        one_layer = {"num_hidden_layers": 1, "vocab_size": 512}
        adapter = load_model(
            spec, config_overrides=one_layer, size_check=False, trust_remote_code=trust_remote_code
        ).adapter
        if type(adapter) is FamilyAdapter:  # the generic fallback: no layout found
            raise UserError(
                f"{option} {spec}: no family adapter reads its layout ({adapter.reason}); "
                "the remedies and the link need one (docs: architecture, a new family)"
            )
    return {
        "parameters": parameter_count(config),
        "layers": shape["layers"],
        "positions": positions,
        "source": source,
    }


def resolve_config(
    spec: str,
    *,
    trust_remote_code: bool = False,
    config_overrides: dict[str, Any] | None = None,
) -> Any:
    """The transformers config :func:`load_model` would build ``spec`` from (nothing is
    built or loaded; for size checks before a model exists).

    >>> resolve_config("tiny-gpt2").n_layer
    2
    """
    return _apply_overrides(_resolve(spec, trust_remote_code)[1], config_overrides)


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
    trust_remote_code: bool = False,
    size_check: bool = True,
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
        trust_remote_code: run custom code that the model's config names
            (``auto_map``); off unless the user asked (``--trust-remote-code``): a
            directory or hub id naming custom code is refused otherwise.
        size_check: on the cpu without a device map, refuse a model whose weights alone
            exceed the free memory (:func:`check_model_memory`) before allocating them;
            off for ``--no-size-check``.

    >>> m = load_model("tiny-qwen2", seed=1)
    >>> (m.family, m.num_layers, m.hidden_size, m.max_length)
    ('qwen2', 2, 32, 256)
    """
    check_choice("--init", init, INITS)
    check_choice("--dtype", dtype, DTYPES)
    check_choice("attention", attn_implementation, ATTENTION)
    dev = resolve_device(device)
    plan = None if device_map is None else parse_device_map(device_map)
    if plan is not None:
        require_accelerate()
    source, config, weights, checkpoint = _resolve(spec, trust_remote_code)
    config = _apply_overrides(config, config_overrides)
    check_model_shape(config, spec)
    checkpoint = _checkpoint_record(checkpoint, config_overrides, init)
    if init == "pretrained" and weights is None:
        what = "a preset holds only the architecture" if source == "preset" else "no weights found"
        raise UserError(f"--init pretrained for {spec}: {what}; use --init random")
    load_from = weights if init in ("pretrained", "auto") else None  # None: built at random
    if size_check and plan is None and dev == "cpu":
        # a random model is drawn in float32 and then cast (build_causal_lm)
        built = dtype if load_from is not None or dtype == "float64" else "float32"
        check_model_memory(config, spec, built)
    use_weights = load_from is not None
    if attn_implementation == "sdpa" and not supports_sdpa(config):
        attn_implementation = "eager"

    model: PreTrainedModel
    if load_from is not None:
        model = _load_pretrained(
            load_from,
            config,
            spec=spec,
            source=source,
            dtype=dtype,
            attn_implementation=attn_implementation,
            trust_remote_code=trust_remote_code,
            plan=plan,
            max_memory=max_memory,
            offload_folder=offload_folder,
        )
    else:
        model = _build_random(config, spec, seed, dtype, attn_implementation, trust_remote_code)
    model = _frozen(model, dev if plan is None else None)
    loaded = LoadedModel.from_module(
        model,
        spec=spec,
        init="pretrained" if use_weights else "random",
        seed=seed,
        source=source,
        no_rope=no_rope,
        no_pos_emb=no_pos_emb,
        no_alibi=no_alibi,
        checkpoint=checkpoint,
    )
    _remove_encodings(loaded, model, no_rope=no_rope, no_pos_emb=no_pos_emb, no_alibi=no_alibi)
    if plan is not None and not use_weights:  # built here: ablate first, then dispatch
        model = dispatch(model, plan, max_memory, offload_folder, spec)
        loaded = dataclasses.replace(
            loaded,
            device=str(execution_device(model.get_input_embeddings())),
            device_map=placed_map(model),
        )
    return loaded


def _checkpoint_record(
    checkpoint: dict[str, Any] | None, config_overrides: dict[str, Any] | None, init: str
) -> dict[str, Any] | None:
    """The checkpoint record as loaded: its ``init_facts`` name the overrides that
    replaced them, and a random init says it is only the architecture's twin."""
    if checkpoint is None:
        return None
    if config_overrides:
        facts = dict(checkpoint.get("init_facts", {}))
        for name in set(facts) & set(config_overrides):
            facts[name] = {"value": config_overrides[name], "from": "config_overrides"}
        checkpoint = {**checkpoint, "init_facts": facts}
    if init == "random":
        checkpoint = {**checkpoint, "weights": "random-init twin (architecture only)"}
    return checkpoint


def _build_random(
    config: Any,
    spec: str,
    seed: int,
    dtype: str,
    attn_implementation: str,
    trust_remote_code: bool,
) -> PreTrainedModel:
    """The untrained model of ``config`` under ``seed`` (:func:`build_causal_lm`), its
    errors naming the ``--model``."""
    try:
        return build_causal_lm(
            config,
            seed=seed,
            dtype=dtype,
            attention=attn_implementation,
            trust_remote_code=trust_remote_code,
        )
    except UserError as err:
        raise UserError(f"--model {spec}: {err}") from None


def _load_pretrained(
    load_from: Any,
    config: Any,
    *,
    spec: str,
    source: str,
    dtype: str,
    attn_implementation: str,
    trust_remote_code: bool,
    plan: str | dict[str, int | str] | None,
    max_memory: Mapping[int | str, int | str] | None,
    offload_folder: str | Path | None,
) -> PreTrainedModel:
    """The model with its weights loaded; with a device ``plan``, loaded straight to place
    (a temporary offload folder is removed with the model)."""
    from transformers import AutoModelForCausalLM

    placement: dict[str, Any] = {}
    if plan is not None:  # plan on an empty skeleton; weights load straight to place
        from accelerate import init_empty_weights

        with init_empty_weights():
            skeleton = AutoModelForCausalLM.from_config(
                config,
                dtype=DTYPES[dtype],
                attn_implementation=attn_implementation,
                trust_remote_code=trust_remote_code,
            )
        resolved = resolve_device_map(skeleton, plan, max_memory, spec)
        folder = offload_folder_for(resolved, offload_folder)
        placement = {"device_map": resolved, "offload_folder": folder}
    with warnings.catch_warnings():
        # transformers warns about unused/generation config keys while loading; not ours.
        warnings.simplefilter("ignore", UserWarning)
        model = load_weights(
            load_from,
            config=config,
            trust_remote_code=trust_remote_code,
            dtype=DTYPES[dtype],
            attn_implementation=attn_implementation,
            local_files_only=_offline() or source in ("directory", "gguf"),
            **placement,
        )
    if placement.get("offload_folder") and offload_folder is None:
        weakref.finalize(model, shutil.rmtree, placement["offload_folder"], True)
    return model


def _frozen(model: PreTrainedModel, device: str | None) -> PreTrainedModel:
    """``model`` moved to ``device`` (None: left where a device map placed it), in eval
    mode, its parameters frozen."""
    if device is not None:
        # transformers wraps PreTrainedModel.to in functools.wraps, which mypy does not
        # bind as a method (it takes dev for self)
        model = model.to(device)  # type: ignore[arg-type]
    model = model.eval()
    for param in model.parameters():
        param.requires_grad_(False)
    return model


def _remove_encodings(
    loaded: LoadedModel,
    model: PreTrainedModel,
    *,
    no_rope: bool,
    no_pos_emb: bool,
    no_alibi: bool,
) -> None:
    """Apply the position-encoding ablations asked for, in place on ``model``.

    A family without the encoding raises its own one-line message.
    """
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
