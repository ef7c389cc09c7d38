"""The docstring examples of the comparison layer and the HTML report run as shown."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "lostmid.compare",
    "lostmid.compare.metrics",
    "lostmid.compare.baselines",
    "lostmid.compare.fit",
    "lostmid.compare.claims",
    "lostmid.compare.candidates",
    "lostmid.report.html",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
