"""Resumable stages: a long job split into named steps whose results are saved as they
finish, so an interrupted run restarted with the same ``--out`` redoes only what is
missing.

A stage is identified by its name and its configuration; a saved stage is reused only
when the saved configuration equals the requested one (same scale, seeds, models...),
otherwise it is recomputed and replaced.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lostmid.runinfo import to_jsonable, write_json


class StageStore:
    """Saves and reuses stage results under ``root/stages/NAME.json``.

    >>> import tempfile
    >>> store = StageStore(Path(tempfile.mkdtemp()))
    >>> store.run("square", {"x": 3}, lambda: {"y": 9})
    {'y': 9}
    >>> store.run("square", {"x": 3}, lambda: 1 / 0)  # reused, not recomputed
    {'y': 9}
    """

    def __init__(self, root: Path, *, fresh: bool = False) -> None:
        self.dir = root / "stages"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fresh = fresh
        self.reused: list[str] = []
        self.computed: list[str] = []
        self.seconds: dict[str, float] = {}  # compute time per stage, reused ones too
        self._saved_seconds: dict[str, float] = {}

    def path(self, name: str) -> Path:
        return self.dir / f"{name}.json"

    def load(self, name: str, config: dict[str, Any]) -> Any | None:
        """The saved result of ``name`` if it was computed with ``config``, else None."""
        path = self.path(name)
        if self.fresh or not path.is_file():
            return None
        try:
            saved = json.loads(path.read_text())
        except json.JSONDecodeError:
            return None  # a damaged file is recomputed, never trusted
        if saved.get("config") != to_jsonable(config):
            return None
        self._saved_seconds[name] = saved.get("seconds", 0.0)
        return saved.get("result")

    def saved_seconds(self, name: str) -> float | None:
        """What the saved result of ``name`` cost when it was computed, if it is saved."""
        try:
            return float(json.loads(self.path(name).read_text()).get("seconds"))
        except (OSError, ValueError, TypeError):
            return None

    def reuse(self, name: str, config: dict[str, Any]) -> Any | None:
        """:meth:`load`, counting a found result as reused (in ``reused`` and ``seconds``)."""
        saved = self.load(name, config)
        if saved is not None:
            self.reused.append(name)
            self.seconds[name] = float(self._saved_seconds.get(name, 0.0))
        return saved

    def computed_elsewhere(self, name: str, seconds: float | None) -> None:
        """Count stage ``name`` as computed now, by another process that saved it here."""
        self.computed.append(name)
        self.seconds[name] = float(seconds or 0.0)

    def record(self) -> dict[str, Any]:
        """What this run did with its stages, the one layout every command's metadata
        carries under ``"stages"``: names reused and computed, and each one's compute
        seconds (a reused stage: what it cost when it was computed)."""
        return {
            "reused": list(self.reused),
            "computed": list(self.computed),
            "seconds": {name: round(sec, 6) for name, sec in self.seconds.items()},
        }

    def run(self, name: str, config: dict[str, Any], compute: Callable[[], Any]) -> Any:
        """Return the saved result of stage ``name`` or compute, save and return it."""
        saved = self.reuse(name, config)
        if saved is not None:
            return saved
        start = time.perf_counter()
        result = to_jsonable(compute())
        self.seconds[name] = time.perf_counter() - start
        write_json(
            self.path(name),
            {"config": config, "result": result, "seconds": self.seconds[name]},
        )
        self.computed.append(name)
        return result
