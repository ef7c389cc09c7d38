"""The examples in the docstrings of the pure modules run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "lostmid.theory",
    "lostmid.theory.exact",
    "lostmid.theory.masks",
    "lostmid.theory.schedules",
    "lostmid.theory.summary",
    "lostmid.theory.continuum",
    "lostmid.theory.run",
    "lostmid.stages",
    "lostmid.reproduce",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0 or name == "lostmid.theory.masks"
