"""The README's Python API tour runs: its ```python blocks, in order, in one namespace;
each import line on its own, in a fresh interpreter; every ``run_*`` the README names is
imported there from its package's front, which loads no torch by itself."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
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


def test_every_import_line_of_the_readme_runs_on_its_own() -> None:
    lines = readme_imports()
    assert len(lines) >= 10
    # One fresh interpreter, each statement in a namespace of its own: an import cycle
    # or a name missing from a package's front fails here, whatever ran before.
    code = (
        "import json, sys\n"
        "failed = {}\n"
        f"for line in {lines!r}:\n"
        "    try:\n"
        "        exec(line, {})\n"
        "    except Exception as err:\n"
        "        failed[line] = repr(err)\n"
        "print(json.dumps(failed))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {}


def test_every_run_function_the_readme_names_is_imported_in_its_python_blocks() -> None:
    named = set(re.findall(r"\b(run_[a-z_]+)\(", README.read_text()))
    imported = {
        alias.name
        for line in readme_imports()
        for node in ast.walk(ast.parse(line))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert {"run_theory", "run_sweep", "run_remedies"} <= named
    assert named - imported == set()


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
