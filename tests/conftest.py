"""Shared test helpers."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest


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
