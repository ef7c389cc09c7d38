"""The README names every command; the package fronts its examples import load no torch
by themselves (the Python examples themselves run in tests/docs/test_examples.py)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_names_every_cli_command() -> None:
    from typer.main import get_command

    from lostmid.cli import app

    text = README.read_text()
    missing = [name for name in get_command(app).commands if f"lostmid {name}" not in text]
    assert missing == []


def readme_imports() -> list[str]:
    """Every ``import lostmid...`` / ``from lostmid... import`` statement of the README's
    Python blocks, as source."""
    found = []
    for block in python_blocks(README.read_text()):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lostmid"):
                found.append(ast.unparse(node))
            elif isinstance(node, ast.Import) and node.names[0].name.startswith("lostmid"):
                found.append(ast.unparse(node))
    return found


def test_the_fronts_and_their_commands_load_no_torch() -> None:
    """``import lostmid.X`` and the command functions of the numpy-only packages stay
    cheap: the README's imports of run_theory and run_sweep do not load torch."""
    code = (
        "import sys\n"
        "import lostmid.theory, lostmid.sweep, lostmid.influence, lostmid.compare\n"
        "import lostmid.ablate, lostmid.behaviour, lostmid.train, lostmid.reproduce\n"
        "import lostmid.remedies\n"
        "from lostmid.theory import TheoryConfig, run_theory\n"
        "from lostmid.sweep import SweepConfig, run_sweep\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
