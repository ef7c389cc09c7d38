"""Progress reaches a log (issue 28): when the output is not a terminal, the long
commands print a plain line as work finishes (count, elapsed, time left), the first and
the last always and at most one every ``EVERY_S`` seconds between; on a terminal only
rich's live bar."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from lostmid.runs.progress import progress

RunCli = Callable[..., tuple[int, str, str]]


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_a_log_gets_the_first_and_last_lines_at_a_modest_rate() -> None:
    log = io.StringIO()
    with progress("train", console=Console(file=log, width=80), every=3600.0) as bar:
        task = bar.add_task("train", total=50)
        for _ in range(50):
            bar.advance(task)
    lines = _lines(log.getvalue())
    assert [line.split(",")[0] for line in lines] == [
        "train: started",  # at once: a first step can take minutes
        "train: 1/50 done (2%)",
        "train: 50/50 done (100%)",
    ]
    assert lines[0] == "train: started, 50 to do"
    assert "elapsed" in lines[1] and "left" in lines[1]


def test_a_log_line_fits_80_columns_whatever_finished_last() -> None:
    log = io.StringIO()
    with progress("reproduce", console=Console(file=log, width=200), every=0.0) as bar:
        task = bar.add_task("", total=36)
        bar.update(task, advance=1, description="done: real-behaviour-full-gemma3-270m-seed0")
        bar.update(task, advance=1, description="done: x")
    lines = _lines(log.getvalue())
    assert all(len(line) <= 80 for line in lines)
    assert lines[1].startswith("reproduce: 1/36 done (3%)") and "last" not in lines[1]
    assert lines[2] == "  last: done: real-behaviour-full-gemma3-270m-seed0"
    assert lines[3].startswith("reproduce: 2/36") and lines[3].endswith("; last: done: x")


def test_a_terminal_gets_no_plain_lines() -> None:
    log = io.StringIO()
    terminal = Console(file=log, width=80, force_terminal=True)
    with progress("sweep", console=terminal, every=0.0) as bar:
        task = bar.add_task("", total=3)
        for _ in range(3):
            bar.advance(task)
    assert "done (" not in log.getvalue()


def test_resumed_work_is_not_reported_again() -> None:
    log = io.StringIO()
    with progress("sweep", console=Console(file=log, width=80), every=0.0) as bar:
        task = bar.add_task("", total=4, completed=3)
        bar.update(task, last="x")  # a field, not progress
        bar.advance(task)
    assert [line.split(",")[0] for line in _lines(log.getvalue())] == [
        "sweep: started",
        "sweep: 4/4 done (100%)",
    ]
    assert _lines(log.getvalue())[0] == "sweep: started, 4 to do (3 already saved)"


def test_slow_steps_still_get_a_time_left() -> None:
    """Steps slower than rich's 30-s speed window (a 8192-token example takes 85 s on
    this box) used to print '~? left' at every line; the mean rate of the steps this run
    finished (resumed ones left out) gives the estimate."""
    from lostmid.runs.progress import LoggedProgress

    now = [0.0]
    log = io.StringIO()
    bar = LoggedProgress(
        label="retrieve", every=0.0, console=Console(file=log, width=120), get_time=lambda: now[0]
    )
    with bar:
        task = bar.add_task("cells", total=60, completed=20)  # 20 resumed
        for _ in range(2):
            now[0] += 85.0
            bar.advance(task)
    lines = [line for line in _lines(log.getvalue()) if "done (" in line]
    assert lines[-1].startswith("retrieve: 22/60 done") and "~?" not in lines[-1]
    assert "0:53:50 left" in lines[-1]  # 38 steps left at 85 s each


def test_sweep_and_train_print_progress_into_a_log(run_cli: RunCli, tmp_path: Path) -> None:
    code, out, err = run_cli(
        "sweep", "--task", "theory", "--lengths", "8,16", "--out", tmp_path / "s"
    )
    assert code == 0, err
    assert "sweep: 1/2 done (50%)" in out and "sweep: 2/2 done (100%)" in out
    # each line names the unit that finished (its folder under units/) and how
    units = json.loads((tmp_path / "s" / "sweep.json").read_text())["units"]
    named = [line.split("last: ")[-1] for line in out.splitlines() if "last: " in line]
    assert sorted(named) == sorted(f"done: {u['key']}" for u in units)
    code, out, err = run_cli("train", "--preset", "micro", "--steps", "12", "--out", tmp_path / "t")
    assert code == 0, err
    assert "train: 12/12 done (100%)" in out


def test_measure_prints_progress_into_a_log(run_cli: RunCli, tmp_path: Path) -> None:
    """measure's samples used rich's plain bar, silent in a log until the end, and its
    branch gains had none (an 8-sample L = 2048 run on SmolLM2: 15 minutes of profile,
    then as long again of gains, with nothing in the log)."""
    code, out, err = run_cli(
        "measure", "--model", "tiny-gpt2", "--length", "16", "--samples", "2", "--probes", "1",
        "--out", tmp_path / "m",
    )  # fmt: skip
    assert code == 0, err
    assert "measure: 1/2 done (50%)" in out and "measure: 2/2 done (100%)" in out
    # the branch gains after the profile take as long again: their own lines
    assert "branch gains: 2/2 done (100%)" in out
