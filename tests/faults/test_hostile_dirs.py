"""Hostile model directories: lostmid never runs code from them unless asked.

The planted modules (``hostile.py``) write a marker file when imported. Without
``--trust-remote-code`` every command that reads a model refuses in one line and the
marker stays absent; with it the code runs (the marker appears), which shows the
marker would catch code that ran."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile import assert_one_line

RunCli = Callable[..., tuple[int, str, str]]


def test_a_pickle_that_runs_code_is_refused_by_every_torch_reader(
    hostile: dict[str, Path], marker: Path
) -> None:
    """The reader boundary never unpickles more than weights, and plain pickle would have
    run the payload (so the marker check can fail)."""
    from lostmid.errors import UserError
    from lostmid.files import load_torch

    with pytest.raises(UserError, match="weights_only refused it"):
        load_torch(hostile["evil_resume"])
    assert not marker.exists()
    code = f"import pickle; pickle.loads(open({str(hostile['evil_resume'])!r}, 'rb').read())"
    subprocess.run([sys.executable, "-c", code], check=True)
    assert marker.exists()


def test_custom_code_runs_only_with_trust_remote_code(
    hostile: dict[str, Path],
    marker: Path,
    run_cli: RunCli,
    tmp_path: Path,
) -> None:
    # trusted code is copied to the session's folder, not $HOME (conftest.model_code_apart)
    args = ["measure", "--model", hostile["custom_code"], "--length", "8", "--samples", "1"]
    code, out, err = run_cli(*args, "--probes", "1", "--out", tmp_path / "refused")
    assert_one_line(code, out, err, "custom code", "--trust-remote-code")
    assert not marker.exists()
    assert not (tmp_path / "refused").exists()  # refused before anything was written
    code, out, err = run_cli(*args, "--probes", "1", "--trust-remote-code", "--out", tmp_path / "t")
    assert marker.exists(), (code, err[-500:])  # asked for: the directory's code ran


def test_a_tokenizer_naming_custom_code_is_refused_before_its_code_runs(
    hostile: dict[str, Path], marker: Path
) -> None:
    from lostmid.behaviour.decoding.tokenizers import load_tokenizer
    from lostmid.errors import UserError

    with pytest.raises(UserError, match="tokenization_evil.EvilTokenizer"):
        load_tokenizer(str(hostile["custom_tokenizer"]))
    assert not marker.exists()


def test_weights_of_a_hostile_directory_are_never_unpickled(
    hostile: dict[str, Path], marker: Path, run_cli: RunCli, tmp_path: Path
) -> None:
    for init in ("pretrained", "auto"):
        code, out, err = run_cli(
            "measure", "--model", hostile["evil_bin"], "--init", init, "--out", tmp_path / init
        )
        assert_one_line(code, out, err, "weights_only refused it")
    assert not marker.exists()
