"""lostmid.models.budget: the parameter estimate behind the size checks is an upper
bound of what the built model holds, and not a wild one, for every family."""

from __future__ import annotations

import pytest

from lostmid.models import MODEL_PRESETS, load_model
from lostmid.models.budget import activation_bytes, parameter_count
from lostmid.models.load import resolve_config

TINY = sorted(name for name in MODEL_PRESETS if name.startswith("tiny-"))


@pytest.mark.parametrize("name", TINY)
def test_the_parameter_estimate_bounds_the_real_count(name: str) -> None:
    actual = sum(p.numel() for p in load_model(name).model.parameters())
    estimate = parameter_count(resolve_config(name))
    assert actual <= estimate <= 1.5 * actual


def test_activations_grow_with_tokens_and_with_eager_attention() -> None:
    config = resolve_config("tiny-qwen2")
    one = activation_bytes(config, tokens=64, length=64, eager=False)
    assert activation_bytes(config, tokens=128, length=64, eager=False) == 2 * one
    assert activation_bytes(config, tokens=64, length=64, eager=True) > one
