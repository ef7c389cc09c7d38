"""What a model will cost before it is built: parameters and activation memory, from its
Hugging Face config alone (for the size checks of :mod:`lostmid.runs.budget`).

Rough upper bounds, not predictions: attention and MLP weights of a standard block,
embeddings (untied head counted), and the activations that a backward pass keeps per
layer and token.

>>> from lostmid.models.load import resolve_config
>>> config = resolve_config("qwen2-0.5b")
>>> round(parameter_count(config) / 1e6)  # 494 M exactly; learned positions assumed
557
"""

from __future__ import annotations

from typing import Any

from lostmid.models.build import DTYPES


def _dim(config: Any, *names: str, default: int = 0) -> int:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return default


def shape_of(config: Any) -> dict[str, int]:
    """layers, hidden, intermediate, heads, vocab, positions of a transformers config
    (GPT-2's ``n_layer``/``n_embd`` names included)."""
    hidden = _dim(config, "hidden_size", "n_embd", "d_model", default=1)
    return {
        "layers": _dim(config, "num_hidden_layers", "n_layer", "num_layers", default=1),
        "hidden": hidden,
        "intermediate": _dim(config, "intermediate_size", "n_inner", "ffn_dim") or 4 * hidden,
        "heads": _dim(config, "num_attention_heads", "n_head", default=1),
        "vocab": _dim(config, "vocab_size", default=1),
        "positions": _dim(config, "max_position_embeddings", "n_positions", "n_ctx"),
    }


def parameter_count(config: Any) -> int:
    """About how many parameters the model of ``config`` has: per block 4 d^2
    (attention) + 3 d m (a gated MLP; 2 d m for GPT-2's is within the bound), plus the
    token (and learned position) embeddings and an untied output head."""
    s = shape_of(config)
    d, m = s["hidden"], s["intermediate"]
    blocks = s["layers"] * (4 * d * d + 3 * d * m + 8 * d)
    embeddings = s["vocab"] * d * (1 if getattr(config, "tie_word_embeddings", True) else 2)
    return int(blocks + embeddings + s["positions"] * d)


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a lostmid dtype name (``float32``: 4)."""
    return int(DTYPES[dtype].itemsize)


def activation_bytes(
    config: Any, *, tokens: int, length: int, dtype: str = "float32", eager: bool = True
) -> float:
    """Activations a backward pass keeps for ``tokens`` tokens in sequences of
    ``length``: per layer and token about 8 d + m values, plus the attention
    probabilities (heads x L per token) of every layer when attention is eager, or of the
    one layer whose backward is running when it is not (a fused kernel keeps none, but
    its backward on the CPU makes them for a layer at a time), plus the logits.

    Checked against real runs: the qwen2-0.5b shape, L = 1024, one sequence, eager (this
    gives 2.6 GiB of activations + 1.8 GiB of weights; peak RSS 4.86 GiB), and
    SmolLM2-135M under sdpa at L = 512-8192 (docs/BENCHMARKS.md, "scale in length": with
    the 1 GiB a measuring process needs besides, 3.5 / 5.7 / 10.9 GiB at L = 2048 / 4096 /
    8192 against peaks of 3.3 / 5.8 / 11.0)."""
    s = shape_of(config)
    per_token = s["layers"] * (8 * s["hidden"] + s["intermediate"])
    per_token += (s["layers"] if eager else 1) * s["heads"] * length
    per_token += s["vocab"]
    return float(tokens) * per_token * max(dtype_bytes(dtype), 4)
