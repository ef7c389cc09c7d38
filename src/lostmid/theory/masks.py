"""Attention masks at initialisation: uniform attention over the allowed positions.

At init q.k is about 0, so softmax attention is uniform over the positions a query may
see. Each mask is the row-stochastic matrix A of that uniform attention, held
implicitly: :meth:`Mask.left_multiply` computes the row vector ``w @ A`` in O(L) time,
never forming A; given a stack of rows (any leading axes) it multiplies each, so a
matrix product ``C @ A`` costs O(L) per row of C. Positions are 1-indexed in the
formulas and 0-indexed in arrays.

Adding a mask is one small class with ``left_multiply``, ``dense`` and ``support``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lostmid.errors import UserError
from lostmid.theory._ops import LinearOps, Ops
from lostmid.typing import Float


class Mask(ABC):
    """Uniform attention under a mask: A[i, j] = 1/|allowed(i)| for j in allowed(i)."""

    name: str

    def validate(self, length: int) -> None:
        """Raise :class:`UserError` if this mask makes no sense at ``length``."""
        return None  # every length is fine unless a mask says otherwise

    @abstractmethod
    def left_multiply(self, w: Float[np.ndarray, "*B L"], ops: Ops = LinearOps) -> np.ndarray:
        """Return ``w @ A`` for every row of ``w`` (last axis L), in the representation of
        ``ops``; the result has the shape of ``w``."""

    @abstractmethod
    def dense(self, length: int) -> Float[np.ndarray, "L L"]:
        """The L x L matrix A (for small L: heatmaps, checks)."""

    @abstractmethod
    def support(self, length: int, target: int, hops: int) -> tuple[int, int]:
        """1-indexed inclusive range of positions that reach ``target`` in <= ``hops`` hops."""

    def spec(self) -> str:
        """The string that :func:`parse_mask` turns back into this mask."""
        return self.name


@dataclass(frozen=True)
class Causal(Mask):
    """Causal mask: A is the Cesàro matrix M, M[i, j] = 1/i for j <= i.

    ``(w M)[j] = sum_{i >= j} w[i] / i``: one suffix sum.
    """

    name = "causal"

    def left_multiply(self, w: Float[np.ndarray, "*B L"], ops: Ops = LinearOps) -> np.ndarray:
        inv_i = ops.encode(1.0 / np.arange(1, w.shape[-1] + 1, dtype=np.float64))
        return ops.suffix_sum(ops.scale(w, inv_i))

    def dense(self, length: int) -> Float[np.ndarray, "L L"]:
        i = np.arange(1, length + 1, dtype=np.float64)
        return np.tril(np.ones((length, length))) / i[:, None]

    def support(self, length: int, target: int, hops: int) -> tuple[int, int]:
        return (1 if hops > 0 else target), target


@dataclass(frozen=True)
class Bidirectional(Mask):
    """Every position attends uniformly to all L positions: A[i, j] = 1/L."""

    name = "bidirectional"

    def left_multiply(self, w: Float[np.ndarray, "*B L"], ops: Ops = LinearOps) -> np.ndarray:
        length = w.shape[-1]
        mean = ops.scale(ops.total(w, axis=-1), ops.encode(1.0 / length))
        return np.repeat(np.asarray(mean, dtype=np.float64)[..., None], length, axis=-1)

    def dense(self, length: int) -> Float[np.ndarray, "L L"]:
        return np.full((length, length), 1.0 / length)

    def support(self, length: int, target: int, hops: int) -> tuple[int, int]:
        return (1, length) if hops > 0 else (target, target)


@dataclass(frozen=True)
class SlidingWindow(Mask):
    """Causal sliding window of width W: position i sees max(1, i-W+1)..i.

    A[i, j] = 1/min(i, W) there. ``(w A)[j] = sum_{i=j}^{min(j+W-1, L)} w[i]/min(i, W)``,
    computed by the two-pass block method (block suffix sums plus block prefix sums), so
    every window sum adds non-negative terms and never subtracts: relative precision is
    kept in float64 and in the log domain.
    """

    width: int
    name = "sliding"

    def __post_init__(self) -> None:
        if self.width < 1:
            raise UserError(f"sliding window width must be >= 1, got {self.width}")

    def spec(self) -> str:
        return f"sliding:{self.width}"

    def validate(self, length: int) -> None:
        if self.width > length:
            raise UserError(
                f"sliding window width {self.width} exceeds the length {length}; "
                f"use a width in 1..{length} (width = length is the causal mask)"
            )

    def left_multiply(self, w: Float[np.ndarray, "*B L"], ops: Ops = LinearOps) -> np.ndarray:
        batch, length, width = w.shape[:-1], w.shape[-1], self.width
        i = np.arange(1, length + 1, dtype=np.float64)
        v = ops.scale(w, ops.encode(1.0 / np.minimum(i, width)))
        blocks = -(-length // width) + 1  # one zero block after the end
        padded = np.full((*batch, blocks * width), ops.zero)
        padded[..., :length] = v
        padded = padded.reshape(*batch, blocks, width)
        suffix = ops.suffix_sum(padded, axis=-1)  # suffix[b, r] = sum of block b from r on
        prefix = ops.prefix_sum(padded, axis=-1)  # prefix[b, r] = sum of block b up to r
        # Window [bW + r, bW + r + W - 1] = block b from r, plus block b+1 up to r-1.
        head = np.full((*batch, blocks - 1, width), ops.zero)
        head[..., 1:] = prefix[..., 1:, :-1]
        out = ops.add(suffix[..., :-1, :], head)
        return out.reshape(*batch, -1)[..., :length]

    def dense(self, length: int) -> Float[np.ndarray, "L L"]:
        a = np.zeros((length, length))
        for i in range(1, length + 1):
            lo = max(1, i - self.width + 1)
            a[i - 1, lo - 1 : i] = 1.0 / (i - lo + 1)
        return a

    def support(self, length: int, target: int, hops: int) -> tuple[int, int]:
        return max(1, target - hops * (self.width - 1)), target


@dataclass(frozen=True)
class PrefixLM(Mask):
    """Prefix-LM: the first P positions attend bidirectionally among themselves;
    position i > P attends causally to 1..i.

    A[i, j] = 1/P for i, j <= P; A[i, j] = 1/i for i > P, j <= i.
    ``(w A)[j] = sum_{i<=P} w[i]/P + sum_{i>P} w[i]/i`` for j <= P, and
    ``sum_{i>=j} w[i]/i`` for j > P. P = 1 is the causal mask.
    """

    prefix: int
    name = "prefix"

    def __post_init__(self) -> None:
        if self.prefix < 1:
            raise UserError(f"prefix length must be >= 1, got {self.prefix}")

    def spec(self) -> str:
        return f"prefix:{self.prefix}"

    def validate(self, length: int) -> None:
        if self.prefix > length:
            raise UserError(
                f"prefix length {self.prefix} exceeds the length {length}; use 1..{length}"
            )

    def left_multiply(self, w: Float[np.ndarray, "*B L"], ops: Ops = LinearOps) -> np.ndarray:
        length, p = w.shape[-1], self.prefix
        i = np.arange(1, length + 1, dtype=np.float64)
        v = ops.scale(w[..., p:], ops.encode(1.0 / i[p:]))
        out = np.empty(w.shape)
        out[..., p:] = ops.suffix_sum(v)
        tail = ops.total(v, axis=-1)[..., None] if length > p else ops.zero
        head = ops.scale(ops.total(w[..., :p], axis=-1), ops.encode(1.0 / p))[..., None]
        out[..., :p] = ops.add(head, tail)
        return out

    def dense(self, length: int) -> Float[np.ndarray, "L L"]:
        a = Causal().dense(length)
        a[: self.prefix, : self.prefix] = 1.0 / self.prefix
        return a

    def support(self, length: int, target: int, hops: int) -> tuple[int, int]:
        if hops == 0:
            return target, target
        return (1, self.prefix) if target <= self.prefix else (1, target)


MASK_HELP = "causal | bidirectional | sliding:W | prefix:P"

MaskLike = str | Mask


def layer_masks(mask: MaskLike | Sequence[MaskLike], layers: int, length: int) -> tuple[Mask, ...]:
    """One validated mask per layer: a single mask for every layer, or a list of H.

    Layers are in order 1..H (a Gemma2-style model alternates ``sliding:W`` and
    ``causal``).

    >>> layer_masks(["sliding:2", "causal"], 2, 8)
    (SlidingWindow(width=2), Causal())
    """
    if isinstance(mask, str | Mask):
        masks = (parse_mask(mask),) * layers
    else:
        masks = tuple(parse_mask(m) for m in mask)
        if len(masks) != layers:
            raise UserError(
                f"mask list has {len(masks)} masks but there are {layers} layers; "
                "give one mask per layer or a single mask"
            )
    for m in set(masks):
        m.validate(length)
    return masks


def parse_mask(spec: str | Mask) -> Mask:
    """Build a mask from its spec string.

    >>> parse_mask("sliding:128")
    SlidingWindow(width=128)
    """
    if isinstance(spec, Mask):
        return spec
    name, _, arg = spec.strip().lower().partition(":")
    if name == "causal" and not arg:
        return Causal()
    if name == "bidirectional" and not arg:
        return Bidirectional()
    if name in ("sliding", "prefix"):
        try:
            value = int(arg)
        except ValueError:
            raise UserError(f"mask '{spec}' needs an integer after ':', e.g. {name}:128") from None
        return SlidingWindow(value) if name == "sliding" else PrefixLM(value)
    raise UserError(f"unknown mask '{spec}'; use one of: {MASK_HELP}")
