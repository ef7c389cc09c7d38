"""The docstring examples of lostmid.train run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "lostmid.train",
    "lostmid.train.config",
    "lostmid.train.corpus",
    "lostmid.train.learning_signal",
    "lostmid.train.loop",
    "lostmid.train.model",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(
        importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.failed == 0
    assert result.attempted > 0
