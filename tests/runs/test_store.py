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


def test_a_stage_output_is_reused_only_while_it_is_the_file_the_stage_wrote(
    tmp_path: Path,
) -> None:
    out = tmp_path / "result.json"
    other = tmp_path / "other.json"
    calls: list[int] = []

    def compute(x: int) -> int:
        calls.append(x)
        out.write_text(f'{{"x": {x}}}')
        return x

    store = StageStore(tmp_path)
    store.run("a", {"x": 1}, lambda: compute(1), outputs=(out,))
    assert StageStore(tmp_path).run("a", {"x": 1}, lambda: compute(9), outputs=(out,)) == 1
    assert calls == [1]  # the same file: reused
    other.write_text('{"x": 2}')  # a whole, valid JSON file of another stage copied over
    out.write_bytes(other.read_bytes())
    said: list[str] = []
    again = StageStore(tmp_path, warn=said.append)
    assert again.run("a", {"x": 1}, lambda: compute(1), outputs=(out,)) == 1
    assert calls == [1, 1] and again.computed == ["a"]
    assert len(said) == 1 and "not the file this stage wrote" in said[0]
    out.unlink()  # a lost output: recomputed without a word
    assert (
        StageStore(tmp_path, warn=said.append).run(
            "a", {"x": 1}, lambda: compute(1), outputs=(out,)
        )
        == 1
    )
    assert calls == [1, 1, 1] and len(said) == 1
