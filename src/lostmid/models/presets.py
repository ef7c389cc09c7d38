"""Architecture presets shipped with the package (hyperparameters only, no weights).

Each ``presets/<name>.json`` holds a ``model_type`` and the config keyword arguments
of that Hugging Face family; ``_comment`` documents the shape. The ``tiny-*`` presets
(2 layers, width 32, vocabulary 256) exist for tests and quick runs, one per family.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def _read_presets() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    folder = resources.files("lostmid.models") / "presets"
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            found[entry.name.removesuffix(".json")] = json.loads(entry.read_text())
    return found


MODEL_PRESETS: dict[str, dict[str, Any]] = _read_presets()
"""Preset name -> config dict (``model_type`` plus family keyword arguments)."""
