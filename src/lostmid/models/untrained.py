"""Is a model at its initialisation? Judged from its weights, before any claim about
pretraining is read from it.

A normalisation layer (LayerNorm, RMSNorm) starts with every gain equal (1, or 0 where
the family adds the 1 in its forward, as Gemma does) and every bias 0, and training
moves them apart: in a trained model no norm's gains are all equal. So a model whose
every norm tensor is constant is at initialisation (``untrained``), one with any norm
tensor that varies is trained, and one with no norm layer cannot be told this way
(``None``). The weights' spread against the config's initialiser range is recorded
beside it as a second fact a reader can check (at initialisation the linear weights'
std equals ``initializer_range`` where the family draws them from it).

>>> from lostmid.models import load_model
>>> untrained_facts(load_model("tiny-qwen2", init="random", seed=0).model)["untrained"]
True
"""

from __future__ import annotations

from typing import Any

import torch


def _norm_tensors(model: Any) -> list[torch.Tensor]:
    tensors = []
    for module in model.modules():
        if "norm" not in type(module).__name__.lower():
            continue
        for name in ("weight", "bias"):
            value = getattr(module, name, None)
            if isinstance(value, torch.Tensor) and value.numel() > 1:
                tensors.append(value.detach())
    return tensors


@torch.no_grad()
def untrained_facts(model: Any) -> dict[str, Any]:
    """``untrained`` (True / False / None: no norm layer to read), how many norm tensors
    there are and how many are constant, and the linear weights' mean std over the
    config's ``initializer_range`` (module docstring)."""
    norms = _norm_tensors(model)
    constant = sum(bool((t == t.flatten()[0]).all()) for t in norms)
    stds = [
        float(p.detach().float().std())
        for name, p in model.named_parameters()
        if p.ndim == 2 and "embed" not in name and "wte" not in name and "wpe" not in name
    ]
    config = getattr(model, "config", None)
    init_range = getattr(config, "initializer_range", None)
    ratio = None
    if stds and init_range:
        ratio = float(sum(stds) / len(stds) / init_range)
    return {
        "untrained": None if not norms else constant == len(norms),
        "norm_tensors": len(norms),
        "constant_norm_tensors": constant,
        "linear_std_over_init_range": ratio,
    }
