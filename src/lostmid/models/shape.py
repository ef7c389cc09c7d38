"""A family-neutral model shape: what training asks an adapter to build."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelShape:
    """The shape of a small causal LM, in words every family understands.

    ``kv_heads`` (grouped-query attention) and ``rope_theta`` are used by the families
    that have them and ignored by the others; dropout is always 0 and the KV cache off.

    >>> ModelShape(layers=2, hidden=32, heads=4).head_dim
    8
    """

    layers: int
    hidden: int
    heads: int
    kv_heads: int | None = None
    intermediate: int | None = None
    context: int = 128
    vocab_size: int = 256
    rope_theta: float = 10000.0
    tie_embeddings: bool = True

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def mlp_width(self) -> int:
        """``intermediate``, or 4 x hidden when not given."""
        return self.intermediate or 4 * self.hidden
