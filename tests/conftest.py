"""Shared test helpers."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def one_job_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stages and sweep units run in the test's own process unless a test asks for
    worker processes (``jobs=2``): monkeypatched functions reach them, and a spawned
    worker's torch import does not slow every test."""
    import lostmid.runs.backend as backend

    monkeypatch.setattr(backend, "default_jobs", lambda: 1)


@pytest.fixture
def run_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    """Run ``lostmid ARGS`` in-process through the real entry point; return
    (exit code, stdout, stderr)."""
    from lostmid.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["lostmid", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def unknown_family_dir(tmp_path: Path) -> Path:
    """A directory with only the config.json of a tiny GPT-J, a family no adapter
    serves and no layout fits (one shared norm, GPT-2 names): the generic adapter."""
    from transformers import AutoConfig

    config = AutoConfig.for_model(
        "gptj",
        vocab_size=64,
        n_embd=32,
        n_layer=2,
        n_head=4,
        n_positions=64,
        rotary_dim=4,
        bos_token_id=0,
        eos_token_id=0,
    )
    (tmp_path / "config.json").write_text(json.dumps(config.to_dict()))
    return tmp_path
