"""The Python examples a user copies run as written: the README's, and the Python API
page's blocks in order in one namespace; each import line of that page on its own in a
fresh interpreter; every ``run_*`` the page names is imported there."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PYTHON_API = ROOT / "docs" / "python-api.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_the_readme_example_runs_and_prints_a_distance() -> None:
    blocks = python_blocks(README.read_text())
    assert len(blocks) == 1, "the README has one Python example"
    assert len(blocks[0].strip().splitlines()) <= 12, "the README's example stays short"
    namespace: dict = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(blocks[0], str(README), "exec"), namespace)  # noqa: S102
    assert namespace["profile"].influence.shape == (32,)
    w1 = float(printed.getvalue())
    assert math.isfinite(w1) and 0 <= w1 < 0.1  # the prediction is close: W1 on [0, 1]


def test_the_python_api_page_runs_in_order() -> None:
    blocks = python_blocks(PYTHON_API.read_text())
    assert len(blocks) >= 4, "the Python API page lost its tour"
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(PYTHON_API), "exec"), namespace)  # noqa: S102
    assert namespace["profile"].influence.shape == (32,)
    assert len(namespace["theory"].record()["influence"]) == 64


def page_imports() -> list[str]:
    """Every ``import lostmid...`` / ``from lostmid... import`` of the page's blocks."""
    found = []
    for block in python_blocks(PYTHON_API.read_text()):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lostmid"):
                found.append(ast.unparse(node))
            elif isinstance(node, ast.Import) and node.names[0].name.startswith("lostmid"):
                found.append(ast.unparse(node))
    return found


def test_every_import_line_of_the_python_api_page_runs_on_its_own() -> None:
    lines = page_imports()
    assert len(lines) >= 10
    # One fresh interpreter, each statement in a namespace of its own: an import cycle
    # or a name missing from a package's front fails here, whatever ran before.
    code = (
        "import json\n"
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


def test_every_run_function_the_page_names_is_imported_in_its_blocks() -> None:
    named = set(re.findall(r"\b(run_[a-z_]+)\(", PYTHON_API.read_text()))
    imported = {
        alias.name
        for line in page_imports()
        for node in ast.walk(ast.parse(line))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert {"run_theory", "run_sweep", "run_remedies"} <= named
    assert named - imported == set()
