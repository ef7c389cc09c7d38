"""Inputs a user can give that used to end in a traceback, an allocator crash, typer's
multi-line box or silence (issue 28, classes B-E): each is one line and exit 2, before
anything is computed or written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import assert_one_line

RunCli = Callable[..., tuple[int, str, str]]
HUGE_SEED = "18446744073709551616"
RETRIEVE_BYTES = ["retrieve", "--model", "tiny-gpt2", "--tokenizer", "bytes"]
BIG = "1000000000"

CASES = [
    # B: tracebacks from user input
    (["measure", "--seed", HUGE_SEED], ("--seed must be a whole number in 0..4294967295",)),
    (["retrieve", "--model", "tiny-gpt2", "--seed", HUGE_SEED], ("--seed",)),
    (["train", "--preset", "micro", "--seed", HUGE_SEED], ("--seed",)),
    (["ablate", "--model", "tiny-gpt2", "--seed", HUGE_SEED], ("--seed",)),
    (
        ["ablate", "--model", "tiny-gpt2", "--seed", "4294967295", "--seeds", "2"],
        ("past the largest seed",),
    ),  # fmt: skip
    (["measure", "--dtype", "float8"], ("--dtype 'float8' unknown",)),
    (
        ["measure", "--model", "tiny-gpt2", "--length", "16", "--samples", "100000000"],
        ("GiB of memory", "--no-size-check"),
    ),  # fmt: skip
    (
        ["measure", "--model", "tiny-gpt2", "--length", "16", "--probes", "100000000"],
        ("GiB of memory",),
    ),  # fmt: skip
    (["ablate", "--model", "tiny-gpt2", "--samples", "100000000"], ("GiB of memory",)),
    (["sweep", "--task", "theory", "--param", "alpha=abc"], ("task theory",)),
    (["sweep", "--task", "theory", "--param", "alpha=nan"], ("not a finite number",)),
    # C: runs that would eat the machine
    (["ablate", "--model", "tiny-gpt2", "--seeds", "1000000000"], ("more seeds than a run",)),
    (["remedies", "--seeds", "1000000000"], ("more seeds than a run",)),
    # D: nonsense once accepted
    (["theory", "--length", "1"], ("--length must be at least 2",)),
    (["theory", "--layers", "0"], ("--layers must be at least 1",)),
    (["compare", "--measured", "m.json", "--bins", "1"], ("--bins must be at least 2, got 1",)),
    # the third trial's: silent or slow before they refused
    (
        ["theory", "--layers", "2", "--length", "8", "--alpha-schedule", "list:0.1"],
        ("alpha schedule has 1 value but there are 2 layers",),
    ),  # fmt: skip
    (
        ["sweep", "--task", "theory", "--lengths", "8", "--seed", "9223372036854775808"],
        ("--seed must be a whole number in 0..4294967295",),
    ),  # fmt: skip
    (
        [*RETRIEVE_BYTES, "--task", "niah-multivalue", "--values-per-key", BIG],
        ("1,000,000,000 needles do not fit --length 1,024",),
    ),
    (
        [*RETRIEVE_BYTES, "--calibrate", "--task", "niah-multikey", "--pilot-examples", BIG],
        ("--pilot-examples 1,000,000,000", "--no-size-check"),
    ),
    (["remedies", "--examples", "1000000000"], ("held-out examples a run", "--no-size-check")),
    # E: click's box as one line
    (["theory", "--lenght", "3"], ("No such option: --lenght", "lostmid theory --help")),
    (["measure", "--length", "abc"], ("--length", "valid integer")),
    (["compare", "--bins", "2"], ("Missing option '--measured'",)),
]


@pytest.mark.parametrize(("argv", "words"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_one_line_before_anything_runs(
    argv: list[str], words: tuple[str, ...], run_cli: RunCli, tmp_path: Path
) -> None:
    code, out, err = run_cli(*argv, "--out", tmp_path / "out")
    assert_one_line(code, out, err, *words)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.json"))


def test_an_empty_out_is_refused_not_the_current_directory(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--out ""`` (an unset shell variable) once wrote theory.json into the current
    directory."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("theory", "--length", "8", "--out", "")
    assert_one_line(code, out, err, "--out", "an empty path")
    assert list(tmp_path.iterdir()) == []


def test_an_option_without_its_value_is_one_line(run_cli: RunCli) -> None:
    code, out, err = run_cli("theory", "--length", "8", "--out")
    assert_one_line(code, out, err, "'--out' requires an argument")


def test_a_train_config_with_bad_adam_betas_is_one_line(tmp_path: Path) -> None:
    from dataclasses import replace

    from lostmid.errors import UserError
    from lostmid.train.config import preset

    for field, value in (("beta1", 2.0), ("beta2", -0.5)):
        with pytest.raises(UserError, match=rf"^{field} must be in \[0, 1\), got {value}$"):
            replace(preset("micro"), **{field: value})


@pytest.mark.parametrize("offline", [None, "0", ""])
def test_an_uncached_hub_id_never_reaches_the_network(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: str | None
) -> None:
    """Hub ids resolve offline: one line at once, no retries, whatever the caller's
    HF_HUB_OFFLINE says (unset, 0, empty)."""
    import time

    if offline is None:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    else:
        monkeypatch.setenv("HF_HUB_OFFLINE", offline)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    start = time.perf_counter()
    code, out, err = run_cli("measure", "--model", "Qwen/Qwen2-0.5B", "--out", tmp_path / "o")
    assert_one_line(code, out, err, "Qwen/Qwen2-0.5B")
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize("name", ["P[/]x", "P[bold red]y", "r[cluster]"])
def test_an_out_with_brackets_is_printed_as_written(
    run_cli: RunCli, tmp_path: Path, name: str
) -> None:
    """A path is text, never console markup: '[/]' once raised after theory.json was
    written, and '[bold red]' printed another path than the one written."""
    out = tmp_path / name
    code, said, err = run_cli("theory", "--layers", "2", "--length", "16", "--out", out)
    assert code == 0, err
    assert (out / "theory.json").is_file()
    assert name in said.replace("\n", "")  # the path as written, not rendered
    code, _, err = run_cli("theory", "--layers", "0", "--out", out)
    assert code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1


def test_an_out_too_long_for_the_file_system_is_one_line(run_cli: RunCli, tmp_path: Path) -> None:
    for out in (tmp_path / ("a" * 256), tmp_path / "/".join(["b" * 200] * 21)):
        code, said, err = run_cli("theory", "--layers", "2", "--out", out)
        assert code == 2 and "choose a shorter one" in err, err
        assert len(err.strip().splitlines()) == 1 and not said
    assert not any(tmp_path.iterdir())  # nothing was made


def test_a_terminal_that_cannot_show_the_path_gets_it_escaped(tmp_path: Path) -> None:
    """PYTHONIOENCODING=ascii and a non-ASCII --out: the run finishes and says where it
    wrote (escaped) instead of a UnicodeEncodeError after the files were written."""
    import os
    import subprocess
    import sys

    out = tmp_path / "été"
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    code = "from lostmid.cli import main; main()"
    args = ["theory", "--layers", "2", "--length", "16", "--out", str(out)]
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"\\xe9t\\xe9" in done.stdout and (out / "theory.json").is_file()
