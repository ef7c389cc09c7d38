"""Splitting or offloading a model over devices with accelerate: device maps.

A device map puts modules on devices: ``auto`` (fill the GPUs in order, then cpu, then
disk), ``balanced`` (the same load on every GPU) or {module name: device}
(:func:`parse_device_map`). :func:`resolve_device_map` turns a plan into accelerate's
flat map for a model and :func:`dispatch` places a built model by it;
:func:`~lostmid.models.load.load_model` is where users meet all of this.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.files import DuplicateKeyError, loads

if TYPE_CHECKING:
    from transformers import PreTrainedModel


DEVICE_MAP_PLANS = ("auto", "balanced")
ACCELERATE_HINT = "pip install 'lostmid[big]' (or pip install accelerate)"


def parse_device_map(spec: str | Mapping[str, Any]) -> str | dict[str, int | str]:
    """``auto``, ``balanced`` or a {module name: device} map, from text or a mapping.

    Devices are a GPU index, ``cuda`` / ``cuda:N`` (read as the index), ``cpu`` or
    ``disk``; module names are checked against the model when it is built
    (:func:`~lostmid.models.load.load_model`). One-line errors.

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
            parsed = loads(spec)
        except DuplicateKeyError as err:
            raise UserError(f"--device-map names a module twice ({err}); give each once") from None
        except ValueError:  # malformed, too deep
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


def device_name(device: int | str | torch.device) -> str:
    """A map's device as text: GPU index 1 -> ``cuda:1``; ``cpu`` and ``disk`` as they are."""
    return f"cuda:{device}" if isinstance(device, int) else str(device)


def placed_map(model: nn.Module) -> dict[str, str] | None:
    """{module: device name} of a model placed by accelerate (its ``hf_device_map``), else
    None."""
    found = getattr(model, "hf_device_map", None)
    return None if found is None else {name: device_name(dev) for name, dev in found.items()}


def execution_device(module: nn.Module) -> torch.device:
    """The device ``module`` computes on: its accelerate hook's, else its parameters'."""
    hook = getattr(module, "_hf_hook", None)
    for part in [hook, *getattr(hook, "hooks", ())]:
        device = getattr(part, "execution_device", None)
        if device is not None:
            return torch.device(device_name(device))
    for param in module.parameters():
        if param.device.type != "meta":
            return param.device
    return torch.device("cpu")


def require_accelerate() -> None:
    try:
        import accelerate  # noqa: F401
    except ImportError:
        raise UserError(
            f"--device-map needs accelerate, which is not installed: {ACCELERATE_HINT}"
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


def resolve_device_map(
    model: PreTrainedModel,
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


def offload_folder_for(
    device_map: Mapping[str, int | str], folder: str | Path | None
) -> str | None:
    """The folder for ``disk`` entries: the caller's, or a new temporary one (None: no disk)."""
    if "disk" not in device_map.values():
        return None
    if folder is not None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return str(folder)
    return tempfile.mkdtemp(prefix="lostmid-offload-")


def dispatch(
    model: PreTrainedModel,
    plan: str | Mapping[str, int | str],
    max_memory: Mapping[int | str, int | str] | None,
    offload_folder: str | Path | None,
    spec: str,
) -> PreTrainedModel:
    """Split or offload a built model over devices with accelerate's hooks."""
    from accelerate import dispatch_model

    device_map = resolve_device_map(model, plan, max_memory, spec)
    folder = offload_folder_for(device_map, offload_folder)
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
