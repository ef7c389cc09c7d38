"""Resumable stages: reuse on the same config, recompute on a different one."""

from __future__ import annotations

from pathlib import Path

from lostmid.runs.store import StageStore


def test_stage_is_reused_only_with_the_same_config(tmp_path: Path) -> None:
    calls: list[int] = []

    def compute(x: int) -> dict[str, int]:
        calls.append(x)
        return {"y": x * x}

    store = StageStore(tmp_path)
    assert store.run("sq", {"x": 2}, lambda: compute(2)) == {"y": 4}
    again = StageStore(tmp_path)  # a restarted run
    assert again.run("sq", {"x": 2}, lambda: compute(2)) == {"y": 4}
    assert calls == [2] and again.reused == ["sq"]
    assert again.seconds["sq"] == store.seconds["sq"]  # its saved compute time
    assert again.run("sq", {"x": 3}, lambda: compute(3)) == {"y": 9}
    assert calls == [2, 3] and again.computed == ["sq"]


def test_damaged_or_fresh_stage_is_recomputed(tmp_path: Path) -> None:
    store = StageStore(tmp_path)
    store.run("a", {}, lambda: [1, 2])
    store.path("a").write_text("{ truncated")
    assert StageStore(tmp_path).run("a", {}, lambda: [3]) == [3]
    assert StageStore(tmp_path, fresh=True).run("a", {}, lambda: [4]) == [4]
