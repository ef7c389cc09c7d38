"""``lostmid.cli.main``: what ends a run, and how it says so. A mistake or an accident of
the machine is one line and exit 2 (Ctrl-C: 130); a bug keeps its traceback."""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path

import pytest

RunCli = Callable[..., tuple[int, str, str]]


def failing(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """Make the computation of ``lostmid theory`` raise ``error``."""
    import lostmid.theory.run as theory

    def compute(config: object) -> object:
        raise error

    monkeypatch.setattr(theory, "compute_theory", compute)


@pytest.mark.parametrize(
    ("error", "code", "words"),
    [
        (MemoryError("Unable to allocate 745 GiB"), 2, "out of memory (MemoryError: Unable"),
        (OSError(errno.ENOSPC, "No space left on device"), 2, "no space left on the device"),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), 2, "disk quota exceeded"),
    ],
)
def test_accidents_are_one_line(
    error: BaseException,
    code: int,
    words: str,
    monkeypatch: pytest.MonkeyPatch,
    run_cli: RunCli,
    tmp_path: Path,
) -> None:
    failing(monkeypatch, error)
    got, out, err = run_cli("theory", "--length", "16", "--out", tmp_path)
    assert got == code
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in out + err


def test_ctrl_c_is_exit_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch, run_cli: RunCli, tmp_path: Path
) -> None:
    failing(monkeypatch, KeyboardInterrupt())
    code, out, err = run_cli("theory", "--length", "16", "--out", tmp_path)
    assert code == 130 and "Traceback" not in out + err
    assert err.strip().splitlines() == [
        "interrupted; what finished is kept under --out: rerun the same command to resume"
    ]


def test_a_bug_keeps_its_traceback(monkeypatch: pytest.MonkeyPatch, run_cli: RunCli, tmp_path):
    failing(monkeypatch, OSError(errno.EIO, "Input/output error"))
    with pytest.raises(OSError, match="Input/output error"):
        run_cli("theory", "--length", "16", "--out", tmp_path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--wait", "-1", "theory"], "--wait must be a number of seconds >= 0, got -1.0"),
        (["sweep", "--task", "theory", "--max-units", "0"], "--max-units must be positive"),
    ],
)
def test_bad_run_options(args: list[str], message: str, run_cli: RunCli, tmp_path: Path) -> None:
    code, _, err = run_cli(*args, "--out", tmp_path / "o")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_a_bad_wait_in_the_environment(monkeypatch: pytest.MonkeyPatch, run_cli: RunCli, tmp_path):
    monkeypatch.setenv("LOSTMID_WAIT", "soon")
    code, _, err = run_cli("theory", "--length", "16", "--out", tmp_path)
    assert code == 2 and "$LOSTMID_WAIT must be a number of seconds >= 0, got 'soon'" in err
