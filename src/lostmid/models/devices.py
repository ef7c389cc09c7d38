"""The one device resolver: ``auto``, ``cpu`` or ``cuda[:N]``, checked before any work."""

from __future__ import annotations

import torch

from lostmid.errors import UserError

DEVICE_HELP = "auto (a GPU when torch sees one, else cpu) | cpu | cuda | cuda:N"


def resolve_device(spec: str) -> str:
    """The device a run will use, as a torch device string; one-line errors.

    ``auto`` is ``cuda`` when torch sees a GPU, else ``cpu``; ``cuda`` and ``cuda:N``
    must exist on this machine.

    >>> resolve_device("cpu")
    'cpu'
    >>> resolve_device("tpu")
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: --device 'tpu' is not a device; use auto, cpu or cuda[:N]
    """
    if spec == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(spec)
    except (RuntimeError, ValueError):
        raise UserError(f"--device {spec!r} is not a device; use auto, cpu or cuda[:N]") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UserError(
                f"--device {spec} asked for but CUDA is not available on this machine; "
                "use --device cpu"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UserError(f"--device {spec}: only {torch.cuda.device_count()} GPU(s) here")
    elif device.type != "cpu":
        raise UserError(f"--device {spec!r} is not supported; use auto, cpu or cuda[:N]")
    return str(device)
