"""Requests that cannot fit: refused in one line before any work, with the number and the
override, in about a second and with nothing written (they used to crash after minutes
or run until killed)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import assert_one_line

RunCli = Callable[..., tuple[int, str, str]]

CASES = [
    (["theory", "--length", "100000000000"], ("TiB of memory", "--no-size-check")),
    (["theory", "--layers", "100000000", "--length", "64"], ("GiB of memory", "--no-size-check")),
    (
        ["theory", "--layers", "100000000", "--length", "3000000", "--mask", "sliding:8"],
        ("would take about", "days", "--no-size-check"),
    ),
    (["measure", "--length", "1000000"], ("measure --model qwen2-0.5b", "TiB of memory")),
    (["sweep", "--task", "theory", "--seeds", "0-100000000000"], ("100,000,000,001 seeds",)),
    (["sweep", "--task", "measure", "--seeds", "5000"], ("5,000 units", "--max-units 1,000")),
    (
        ["sweep", "--task", "theory", "--lengths", "8,16", "--max-units", "1"],
        ("plans 2 units (2 length)", "raise --max-units"),
    ),
    # issue 28, class C: every multiplier (examples, steps, layers, seeds)
    (
        ["retrieve", "--model", "tiny-qwen2", "--examples", "1000000000"],
        ("retrieve --examples 1,000,000,000 (5,000,000,000 examples", "TiB", "--no-size-check"),
    ),
    (
        ["train", "--preset", "micro", "--steps", "100000000000"],
        ("train --preset micro --steps 100,000,000,000 would take about", "--no-size-check"),
    ),
    (
        ["train", "--task", "kv", "--steps", "100000000000"],
        ("train --task kv", "would take about", "--no-size-check"),
    ),
    (
        ["ablate", "--model", "tiny-gpt2", "--layers", "10000000"],
        ("ablate --model tiny-gpt2 (10,000,000 layers", "GiB of memory", "--no-size-check"),
    ),
    (
        ["ablate", "--model", "tiny-gpt2", "--layers", "1000", "--seeds", "50000"],
        ("--seeds 50,000 x 6 rungs would take about", "days", "--no-size-check"),
    ),
    (
        ["remedies", "--seeds", "90000"],
        ("remedies --seeds 90,000", "would take about", "--no-size-check"),
    ),
    (
        ["remedies", "--steps", "100000000"],
        ("--steps 100,000,000 would take about", "--no-size-check"),
    ),
]


@pytest.mark.parametrize(("argv", "words"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_request_too_big_is_refused_at_once(
    argv: list[str], words: tuple[str, ...], run_cli: RunCli, tmp_path: Path
) -> None:
    start = time.perf_counter()
    code, out, err = run_cli(*argv, "--out", tmp_path / "out")
    assert time.perf_counter() - start < 10
    assert_one_line(code, out, err, *words)
    assert not (tmp_path / "out").exists()


def test_the_override_skips_the_check(run_cli: RunCli, tmp_path: Path) -> None:
    """--no-size-check lets a request the estimate refuses through to the computation
    (here one that fits after all: a tight available memory, not a big request)."""
    import lostmid.runs.budget as budget
    from lostmid.theory.run import TheoryConfig

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(budget, "available_memory", lambda: 1e6)  # 1 MB "free"
        code, out, err = run_cli("theory", "--length", "64", "--layers", "2", "--out", tmp_path)
        assert_one_line(code, out, err, "needs about", "0.000931 GiB available")
        assert TheoryConfig(length=64, layers=2, no_size_check=True).length == 64
        code, _, err = run_cli(
            "theory", "--length", "64", "--layers", "2", "--no-size-check", "--out", tmp_path
        )
        assert code == 0, err


# The first step of each command after its size check, and a small request of it.
AFTER_CHECK = {
    "retrieve": ("lostmid.behaviour.retrieve.run", "_check_out"),
    "ablate": ("lostmid.ablate.run", "build_rung"),
    "remedies": ("lostmid.remedies.run", "plan_remedy_stages"),
}
SMALL = {
    "retrieve": ["retrieve", "--model", "tiny-gpt2", "--tokenizer", "bytes", "--task", "kv",
                 "--pairs", "3", "--examples", "1"],
    "ablate": ["ablate", "--model", "tiny-gpt2", "--length", "8", "--seeds", "1", "--samples",
               "1", "--probes", "1"],
    "remedies": ["remedies", "--quick", "--preset", "retrieval-micro", "--steps", "2", "--seeds",
                 "1", "--remedies", "loss-weight"],
}  # fmt: skip


@pytest.mark.parametrize("command", sorted(AFTER_CHECK))
def test_no_size_check_lets_a_refused_request_through(
    command: str, run_cli: RunCli, tmp_path: Path
) -> None:
    """With every estimate refusing (the budget check patched to refuse anything), the
    request is refused in one line; with --no-size-check no estimate is asked for and the
    command goes on to its next step (patched to stop there, so nothing runs)."""
    import importlib

    import lostmid.runs.budget as budget
    from lostmid.errors import UserError

    asked: list[str] = []

    def refuse(what: str, **_: object) -> None:
        asked.append(what)
        raise UserError(f"{what}: refused by the test; pass --no-size-check to run it anyway")

    def reached(*_: object, **__: object) -> None:
        raise UserError("reached the step after the size check")

    module, step = AFTER_CHECK[command]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(budget, "check_budget", refuse)
        patch.setattr(importlib.import_module("lostmid.ablate.run"), "check_budget", refuse)
        patch.setattr(importlib.import_module(module), step, reached)
        code, out, err = run_cli(*SMALL[command], "--out", tmp_path / "out")
        assert_one_line(code, out, err, "refused by the test", "--no-size-check")
        assert asked
        asked.clear()
        code, out, err = run_cli(*SMALL[command], "--no-size-check", "--out", tmp_path / "out")
        assert_one_line(code, out, err, "reached the step after the size check")
        assert asked == []
    assert not (tmp_path / "out").exists()


def test_a_reproduce_stage_too_big_is_refused_before_its_out_is_claimed(
    tmp_path: Path, run_cli: RunCli
) -> None:
    """Each planned stage's size check runs before the folder is opened: the refusal
    names the reproduce option (not the inner command's flag, nor a --no-size-check that
    reproduce does not have) and leaves no --out, so the corrected command runs there."""
    out = tmp_path / "r"
    code, _, err = run_cli(
        "reproduce", "--quick", "--models", "tiny-qwen2", "--length", "32", "--seeds", "1",
        "--train-steps", "1000000000000", "--out", out,
    )  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--train-steps 1,000,000,000,000 would take about" in err
    assert "--no-size-check" not in err
    assert not out.exists()
