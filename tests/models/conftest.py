"""Model tests: ``gguf_files.py`` (tiny GGUF files written here) imported by its
top-level name, as ``tests/faults`` does with its harness."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
