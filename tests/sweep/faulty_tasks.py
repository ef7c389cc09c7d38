"""Tasks that fail on purpose, for the sweep's retry and failure tests.

Imported by name (``faulty_tasks``) from this folder, by the test process and by Ray
workers alike (the Ray fixture puts this folder on their PYTHONPATH), so the task specs
pickle by reference.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lostmid.sweep.units import TaskSpec


def _defaults() -> dict[str, Any]:
    return {"seed": 0, "fail_times": 1}


def _build(params: Any) -> dict[str, Any]:
    return dict(params)


def _run(config: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Fail the first ``fail_times`` tries of this unit (counted in a file), then succeed."""
    folder.mkdir(parents=True, exist_ok=True)
    tries = folder / "tries.txt"
    count = int(tries.read_text()) + 1 if tries.is_file() else 1
    tries.write_text(str(count))
    if count <= config.get("fail_times", 1):
        raise RuntimeError(f"planned failure {count} of seed {config.get('seed', 0)}")
    (folder / "out.json").write_text(json.dumps({"tries": count}))
    return {"file": "out.json", "tries": count}


FLAKY = TaskSpec(
    name="flaky",
    defaults=_defaults,
    axes={"seeds": "seed"},
    build=_build,
    run=_run,
)
