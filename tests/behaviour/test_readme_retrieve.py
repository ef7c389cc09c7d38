"""The retrieve page's two commands that run as written (a heatmap grid, and the same
examples read back with ``--data``) run, in order, exactly as the page prints them."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "docs" / "commands" / "retrieve.md"
Cli = Callable[..., tuple[int, str, str]]


def readme_commands() -> list[list[str]]:
    lines = [line.strip() for line in README.read_text().splitlines()]
    found = [
        shlex.split(line) for line in lines if line.startswith("lostmid retrieve --model tiny")
    ]
    return [words[1:] for words in found]  # without "lostmid"


def test_the_readme_heatmap_and_data_commands_run_as_written(
    run_cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = readme_commands()
    assert len(commands) == 2 and "--lengths" in commands[0] and "--data" in commands[1]
    monkeypatch.chdir(tmp_path)
    for words in commands:
        code, _, err = run_cli(*words)
        assert code == 0, err
    grid = json.loads(Path("results/heatmap/retrieve.json").read_text())
    back = json.loads(Path("results/kv-data/retrieve.json").read_text())
    assert grid["lengths"] == [64, 128, 192] and len(grid["cells"]) == 15
    assert Path("results/heatmap/heatmap.png").stat().st_size > 1000
    assert back["data"]["format"] == "liu-kv" and back["cells"] == grid["cells"]
