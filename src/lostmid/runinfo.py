"""Provenance for every run: resolved config, seed, versions, timings; the JSON writer.

Reading files is :mod:`lostmid.files`' job (:func:`lostmid.files.read_json`,
:func:`lostmid.files.read_result`).
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.files import write_text
from lostmid.schemas import check_written

_PACKAGES = ("lostmid", "numpy", "scipy", "torch", "transformers", "gguf", "matplotlib")


def versions() -> dict[str, str | None]:
    """Installed versions of Python and the libraries that shape a result."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def run_metadata(
    command: str, config: Mapping[str, Any], seed: int | None, timings: Mapping[str, float]
) -> dict[str, Any]:
    """The block every result file carries so the run can be traced and repeated."""
    return {
        "command": command,
        "argv": sys.argv,
        "config": dict(config),
        "seed": seed,
        "versions": versions(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "timings_s": {k: round(v, 6) for k, v in timings.items()},
        "finished_utc": datetime.now(UTC).isoformat(timespec="seconds"),
    }


class Timer:
    """Named wall-clock timings: ``with timer("forward"): ...``; ``timer.seconds``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start


def to_jsonable(obj: Any) -> Any:
    """Numpy arrays, dataclasses and non-finite floats made JSON-safe (inf/nan -> None).

    A result with a ``record()`` method is written as its record (its documented JSON
    form); any other dataclass as its fields.

    >>> import numpy as np
    >>> to_jsonable({"x": np.array([1.0, np.inf]), "path": Path("a")})
    {'x': [1.0, None], 'path': 'a'}
    """
    if callable(getattr(obj, "record", None)) and not isinstance(obj, type):
        return to_jsonable(obj.record())
    if is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_json(path: Path, obj: Any) -> Path:
    """Write ``obj`` as JSON atomically (:func:`lostmid.files.write_text`: a temporary
    file, then a rename): never a half-written file; a full disk is one line. The one
    JSON writer of the package. A result file is checked against its published layout
    after it is written (:func:`lostmid.schemas.check_written`: a warning, never a lost
    file)."""
    document = to_jsonable(obj)
    written = write_text(path, json.dumps(document, indent=1, allow_nan=False) + "\n")
    check_written(str(path), document)
    return written
