"""The README's Python API tour runs: its ```python blocks, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_python_blocks_run() -> None:
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 4, "the README lost its Python API tour"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    assert namespace["profile"].influence.shape == (32,)


def test_readme_names_every_cli_command() -> None:
    from typer.main import get_command

    from lostmid.cli import app

    text = README.read_text()
    missing = [name for name in get_command(app).commands if f"lostmid {name}" not in text]
    assert missing == []
