"""The lazy package faces: each package whose names load torch on first use declares them
once, in its ``__init__.pyi`` (``lazy_loader.attach_stub``); type checkers read the same
file. Every name resolves to the object its module defines, no name shadows a submodule,
and importing a face loads nothing heavy."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import lostmid

ROOT = Path(lostmid.__file__).parent
STUBBED = sorted(p.with_suffix(".py") for p in ROOT.rglob("__init__.pyi"))


def package_name(init: Path) -> str:
    return ".".join(init.parent.relative_to(ROOT.parent).parts)


def stub_exports(init: Path) -> dict[str, str]:
    """name -> the module the stub imports it from (``from .sub import n as n``)."""
    found: dict[str, str] = {}
    package = package_name(init)
    for node in ast.parse(init.with_suffix(".pyi").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            assert node.level == 1 and node.module, ast.unparse(node)
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name}: not re-exported"
                found[alias.name] = f"{package}.{node.module}"
    return found


def test_the_packages_are_found() -> None:
    names = {package_name(p) for p in STUBBED}
    assert {"lostmid.influence", "lostmid.train", "lostmid.behaviour.training"} <= names
    for init in STUBBED:
        assert "attach_stub(__name__, __file__)" in init.read_text(encoding="utf-8")


@pytest.mark.parametrize("init", STUBBED, ids=package_name)
def test_each_name_comes_from_the_module_named(init: Path) -> None:
    package = importlib.import_module(package_name(init))
    exports = stub_exports(init)
    assert sorted(package.__all__) == sorted(exports)
    for name, module in exports.items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("init", STUBBED, ids=package_name)
def test_no_name_shadows_a_submodule(init: Path) -> None:
    """A name equal to a submodule's would be replaced by the submodule once imported."""
    submodules = {p.stem for p in init.parent.glob("*.py")} | {
        p.parent.name for p in init.parent.glob("*/__init__.py")
    }
    assert not set(stub_exports(init)) & submodules


def test_a_face_loads_no_torch() -> None:
    """Importing every face (what ``lostmid --help`` does) leaves torch unloaded."""
    names = ", ".join(package_name(p) for p in STUBBED)
    code = f"import {names}, sys; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
