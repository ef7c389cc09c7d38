"""Every docstring example in the package runs and gives what it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import lostmid

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(lostmid.__path__, prefix="lostmid.")
    if m.name != "lostmid.cli.__main__"  # running it is running the CLI
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_the_public_packages_have_examples() -> None:
    for name in ("lostmid.theory", "lostmid.compare", "lostmid.influence", "lostmid.models"):
        finder = doctest.DocTestFinder()
        examples = sum(len(t.examples) for t in finder.find(importlib.import_module(name)))
        assert examples > 0, name
