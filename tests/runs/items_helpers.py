"""A module-level stage body whose work counts its own items on a bar without a console,
as retrieve's does inside a stage (a spawned worker imports it by name)."""

from __future__ import annotations

import time


def counted(items: int, seconds_each: float) -> dict[str, int]:
    from lostmid.runs.progress import progress

    with progress("retrieve", console=None) as bar:
        task = bar.add_task("scoring", total=items)
        for _ in range(items):
            time.sleep(seconds_each)
            bar.advance(task)
    return {"items": items}
