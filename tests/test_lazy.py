"""lostmid.lazy: every lazily exported package namespace tells type checkers the same
names, from the same modules, as it imports at run time."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import lostmid

ROOT = Path(lostmid.__file__).parent
LAZY_PACKAGES = sorted(
    p for p in ROOT.rglob("__init__.py") if "attach(" in p.read_text(encoding="utf-8")
)


def package_name(init: Path) -> str:
    return ".".join(init.parent.relative_to(ROOT.parent).parts)


def run_time_exports(init: Path) -> dict[str, str]:
    """name -> the module ``attach`` imports it from (the map in the ``attach`` call)."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    call = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "attach"
    )
    exports = ast.literal_eval(call.args[1])
    package = package_name(init)
    return {name: f"{package}.{module}" for module, names in exports.items() for name in names}


def typed_exports(init: Path) -> dict[str, str]:
    """name -> module, from the ``from M import N as N`` lines under ``if TYPE_CHECKING:``;
    an import without ``as N`` (not a re-export for a typed package) is reported as such."""
    found: dict[str, str] = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module
                for alias in statement.names:
                    exported = alias.asname == alias.name
                    found[alias.name] = statement.module if exported else "(not re-exported)"
    return found


def test_the_packages_are_found() -> None:
    names = {package_name(p) for p in LAZY_PACKAGES}
    assert {"lostmid.influence", "lostmid.train", "lostmid.behaviour.training"} <= names


@pytest.mark.parametrize("init", LAZY_PACKAGES, ids=package_name)
def test_type_checkers_see_the_run_time_names(init: Path) -> None:
    assert typed_exports(init) == run_time_exports(init)


@pytest.mark.parametrize("init", LAZY_PACKAGES, ids=package_name)
def test_each_name_comes_from_the_module_named(init: Path) -> None:
    """The map is right: each name is defined in (or imported into) its module."""
    package = importlib.import_module(package_name(init))
    for name, module in run_time_exports(init).items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name)


def test_a_missing_typed_name_is_caught(tmp_path: Path) -> None:
    init = tmp_path / "__init__.py"
    init.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from pkg.a import f as f, g\n"
        "__getattr__, __dir__, __all__ = attach(__name__, {'a': ['f', 'g', 'h']})\n"
    )
    assert typed_exports(init) == {"f": "pkg.a", "g": "(not re-exported)"}
