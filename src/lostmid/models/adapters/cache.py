"""Continuing from a key-value cache: what a family needs to read more tokens after a
context it has already encoded (``retrieve --design shared``).

A context of T tokens is run once (:meth:`CacheContinuation.prefill`); its cache is
copied for a batch of B continuations (:meth:`~CacheContinuation.repeat_cache`: each
forward appends to the cache it is given, so the context's own is never handed out);
then W more columns per row are read after it
(:meth:`~CacheContinuation.continue_from`). A row's real tokens are marked by ``mask``
(B, W); they sit at positions T, T + 1, ... in order, whatever padding surrounds them:
position = T + cumsum(mask) - 1. Padding after a row's tokens (right padding) never
changes them: causal attention does not look ahead. Padding before them (a gap between
the context and a row, as left padding makes when rows of several lengths decode
together) is exact where every layer's attention is causal, but a sliding window counts
the gap's columns against its width (Mistral, Gemma2):
:meth:`~CacheContinuation.gaps_are_exact` says which, and callers group rows by length
where it is not.

Where positions are given and every layer's mask is known (:meth:`~CacheContinuation.
packs_exactly`), several continuations share one row after the context
(:meth:`~CacheContinuation.continue_packed`, each token masked to its own; a sliding
window applied by the mask, the prefill keeping every column), and the caches of
several contexts stack into one batch (:meth:`~CacheContinuation.stack_caches`: a
buffer of fixed capacity that each step writes in place).

Family differences handled here, once: the cache argument's name (``cache`` in
Transformers >= 5, ``past_key_values`` before), whether the forward takes
``position_ids`` (BLOOM does not: ALiBi positions come from the attention mask), and
the cache's own batch operations (``batch_repeat_interleave`` of ``DynamicCache`` and its
sliding-window layers).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from lostmid.errors import UserError
from lostmid.models.attention import (
    GROUPED_SDPA,
    SPLIT_KWARG,
    attention_kernel,
    grouped_sdpa_available,
    split_columns,
)

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def _accepts(model: torch.nn.Module, name: str) -> bool:
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - exotic wrappers
        return False


def cache_argument_name(model: torch.nn.Module) -> str:
    """The forward's name for a key-value cache: ``cache`` (transformers >= 5) or
    ``past_key_values`` (earlier versions)."""
    return "cache" if _accepts(model, "cache") else "past_key_values"


def logits_to_keep_name(model: torch.nn.Module) -> str | None:
    """The forward's argument that computes logits at the last N columns only
    (``logits_to_keep``; ``num_logits_to_keep`` before transformers 4.50), None when
    it has none (every column's logits are computed)."""
    return next((n for n in ("logits_to_keep", "num_logits_to_keep") if _accepts(model, n)), None)


def cache_length(cache: Any) -> int:
    """The columns a batch-1 cache holds."""
    return int(cache.get_seq_length())


def crop_to(cache: Any, length: int) -> None:
    """Cut a batch-1 ``cache`` back to its first ``length`` columns, in place (the
    columns after them dropped; what was read before them is unchanged)."""
    extra = cache_length(cache) - int(length)
    if extra < 0:
        raise ValueError(f"a cache of {cache_length(cache)} columns cannot grow to {length}")
    if extra:
        cache.crop(-extra)


def cache_bytes(cache: Any) -> int:
    """The bytes of a ``DynamicCache``'s keys and values (0 where it has no layers)."""
    return sum(
        layer.keys.nbytes + layer.values.nbytes
        for layer in getattr(cache, "layers", ())
        if getattr(layer, "keys", None) is not None
    )


@functools.cache
def _buffered_layer() -> type | None:
    """transformers' ``DynamicLayer`` over a preallocated buffer (None before it had one)."""
    try:
        from transformers.cache_utils import DynamicLayer
    except ImportError:  # pragma: no cover - Transformers < 4.56
        return None

    class BufferedLayer(DynamicLayer):
        """Keys and values in a buffer of fixed capacity: ``update`` writes the new
        columns in place and returns views of the columns written so far."""

        def __init__(self, keys: torch.Tensor, values: torch.Tensor, length: int) -> None:
            super().__init__()
            self.buffers, self.length = (keys, values), length
            self.device = keys.device
            self.keys, self.values = keys[:, :, :length], values[:, :, :length]
            self.is_initialized = True

        def update(
            self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
        ) -> tuple[torch.Tensor, torch.Tensor]:
            keys, values = self.buffers
            lo, hi = self.length, self.length + key_states.shape[-2]
            if hi > keys.shape[-2]:
                raise RuntimeError(f"a stacked cache holds {keys.shape[-2]} columns, asked {hi}")
            keys[:, :, lo:hi] = key_states
            values[:, :, lo:hi] = value_states
            self.length = hi
            self.keys, self.values = keys[:, :, :hi], values[:, :, :hi]
            return self.keys, self.values

    return BufferedLayer


def output_cache(output: Any) -> Any:
    """The cache a forward returned (``cache`` or ``past_key_values``)."""
    found = getattr(output, "cache", None)
    return found if found is not None else getattr(output, "past_key_values", None)


class CacheContinuation:
    """Prefill a context, copy its cache for a batch, continue from it (module doc)."""

    if TYPE_CHECKING:  # the adapter this mixes into (FamilyAdapter) defines it

        def layer_masks(self, config: Any, length: int) -> list[str]: ...

    def cache_argument(self, model: torch.nn.Module) -> str:
        """The forward's cache argument (a causal LM's or its base model's): ``cache``
        (Transformers >= 5) or ``past_key_values``."""
        return cache_argument_name(model)

    def takes_position_ids(self, model: PreTrainedModel) -> bool:
        """Whether the forward takes ``position_ids`` (else positions follow the mask)."""
        return _accepts(model, "position_ids")

    @torch.no_grad()
    def prefill(self, model: PreTrainedModel, ids: torch.Tensor, *, full: bool = False) -> Any:
        """Run a context ``ids`` (1, T) once; its key-value cache (only the last column of
        logits is computed where the family allows). ``full``: every layer keeps all
        the columns (:meth:`full_cache`), so the cache can be cropped to any prefix."""
        kwargs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "use_cache": True,
        }
        keep = logits_to_keep_name(model)
        if keep is not None:
            kwargs[keep] = 1
        if self.takes_position_ids(model):
            kwargs["position_ids"] = torch.arange(ids.shape[1], device=ids.device)[None]
        windows = self.layer_windows(model.config) or []
        if full or (any(w is not None for w in windows) and self.packs_exactly(model)):
            # every layer keeps all the context's columns (a sliding layer's cache keeps
            # its window only): continue_packed's masks apply the window
            kwargs[self.cache_argument(model)] = self.full_cache()
        return output_cache(model(**kwargs))

    def full_cache(self) -> Any:
        """An empty ``DynamicCache`` whose every layer keeps all the columns it reads,
        sliding ones too (a family's own cache keeps a sliding layer's window only), so
        it can be cropped back to any shorter prefix (``cache.crop(-n)``); the family's
        masks still apply each window."""
        from transformers import DynamicCache

        return DynamicCache()

    def crops(self, cache: Any) -> bool:
        """Whether ``cache`` can be cut back to a prefix and read on from there
        (:func:`crop_to`): transformers' ``DynamicCache`` whose every layer keeps all
        its columns (what :meth:`full_cache` makes)."""
        layers = getattr(cache, "layers", None) or []
        return len(layers) > 0 and all(type(layer).__name__ == "DynamicLayer" for layer in layers)

    def repeat_cache(self, cache: Any, batch: int) -> Any:
        """A copy of a batch-1 ``cache`` with ``batch`` identical rows."""
        copied = copy.deepcopy(cache)
        if batch > 1:
            copied.batch_repeat_interleave(batch)
        return copied

    def gaps_are_exact(self, model: PreTrainedModel, length: int) -> bool:
        """Whether padding between cached tokens and new ones leaves the numbers exact at
        ``length`` total tokens: every layer causal (no sliding window shorter than it).
        False where the family's masks are unknown (the generic adapter)."""
        try:
            specs = self.layer_masks(model.config, length)
        except UserError:
            return False
        return all(spec == "causal" for spec in specs)

    # the forward takes {layer type: 4D mask} for models with full and sliding layers
    # (Gemma 2 and 3 read ``attention_mask`` so when it is a dict)
    masks_by_layer_type = False

    def layer_windows(self, config: Any) -> list[int | None] | None:
        """Each layer's sliding window (None: causal at any length); None where the
        family's masks are unknown (the generic adapter)."""
        try:
            specs = self.layer_masks(config, 1 << 40)
        except UserError:
            return None
        if any(not (s == "causal" or s.startswith("sliding:")) for s in specs):
            return None
        return [None if s == "causal" else int(s.split(":")[1]) for s in specs]

    def packs_exactly(self, model: PreTrainedModel) -> bool:
        """Whether several continuations can be read after one cached context in a single
        row (:meth:`continue_packed`) with the numbers of separate rows: the forward takes
        ``position_ids`` and custom 4D masks, positions are not derived from the mask (no
        ALiBi), and every layer gets the mask of its kind: one mask where all layers are
        alike (causal, or one sliding window: Mistral), one per layer type where the
        family's forward takes them (Gemma 2 and 3). Where a layer slides, :meth:`prefill`
        keeps all of the context's columns in every layer and the window is applied by
        the mask. False for the generic adapter (masks unknown)."""
        windows = self.layer_windows(model.config)
        if windows is None or len({w for w in windows if w is not None}) > 1:
            return False
        return (
            self.takes_position_ids(model)
            and not getattr(self, "has_alibi", False)
            and (len(set(windows)) == 1 or self.masks_by_layer_type)
        )

    def packed_masks(
        self,
        model: PreTrainedModel,
        visible: torch.Tensor,
        pos_q: torch.Tensor,
        pos_k: torch.Tensor,
    ) -> torch.Tensor | dict[str, torch.Tensor]:
        """The additive masks (K, 1, W, P + W) of a packed forward from which columns each
        token sees, ``visible`` (K, W, P + W): as they are for causal layers, and within the
        window (a column at position p_k seen from p_q when p_k > p_q - window, as
        transformers' sliding layers do) for sliding ones; a dict by layer type where
        the two kinds mix."""
        dtype = next(model.parameters()).dtype

        def additive(seen: torch.Tensor) -> torch.Tensor:
            mask = torch.zeros(seen.shape, dtype=dtype, device=seen.device)
            return mask.masked_fill_(~seen, torch.finfo(dtype).min)[:, None]

        windows = self.layer_windows(model.config) or [None]
        window = next((w for w in windows if w is not None), None)
        if window is None:
            return additive(visible)
        slid = additive(visible & (pos_k[:, None, :] > pos_q[:, :, None] - window))
        if all(w is not None for w in windows):
            return slid
        return {"full_attention": additive(visible), "sliding_attention": slid}

    def stacks(self, cache: Any) -> bool:
        """Whether :meth:`stack_caches` takes ``cache``: transformers' ``DynamicCache`` of
        plain layers (not Transformers < 4.56, not sliding windows)."""
        layers = getattr(cache, "layers", None) or []
        return (
            _buffered_layer() is not None
            and len(layers) > 0
            and all(type(layer).__name__ == "DynamicLayer" for layer in layers)
        )

    def stack_caches(self, caches: Sequence[Any], room: int) -> Any | None:
        """One cache of ``len(caches)`` rows from batch-1 caches of any lengths: row k
        holds cache k's T_k columns, then zeros up to the longest, then ``room`` columns
        preallocated for what :meth:`continue_packed` reads next (written in place, the
        cache never concatenated again: a greedy step copies one column per row, not the
        whole context). None where a cache is not transformers' ``DynamicCache`` of plain
        layers (Transformers < 4.56, sliding windows): callers then read one context at a
        time."""
        layer_type = _buffered_layer()
        if layer_type is None or not caches or not all(self.stacks(c) for c in caches):
            return None
        per_cache = [c.layers for c in caches]
        longest = max(cache_length(c) for c in caches)
        stacked = copy.copy(caches[0])
        stacked.layers = []
        for depth in range(len(per_cache[0])):
            parts = [layers[depth] for layers in per_cache]
            first = parts[0].keys
            keys = first.new_zeros((len(parts), first.shape[1], longest + room, first.shape[3]))
            values = torch.zeros_like(keys, dtype=parts[0].values.dtype)
            for k, part in enumerate(parts):
                width = part.keys.shape[-2]
                keys[k, :, :width] = part.keys[0]
                values[k, :, :width] = part.values[0]
            stacked.layers.append(layer_type(keys, values, longest))
        return stacked

    @torch.no_grad()
    def continue_packed(
        self,
        model: PreTrainedModel,
        cache: Any,
        ids: torch.Tensor,
        owners: torch.Tensor,
        positions: torch.Tensor,
        seen: tuple[torch.Tensor, torch.Tensor],
        *,
        keep: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Any, tuple[torch.Tensor, torch.Tensor]]:
        """(logits, cache, seen) of tokens ``ids`` (K, W) of several continuations packed
        in each of K rows after that row's cached columns; ``cache`` (K rows) is extended
        in place.

        Each cached or new column has an owner (-1: the row's shared context, i >= 0:
        continuation i of that row, -2: padding, seen by no one) and a position. A token
        of continuation i sees a column of its row when the column is the context's, or
        continuation i's at a position not after its own: what it sees on a row of its
        own, so the numbers equal separate rows' (the test holds it to 1e-5), while each
        context's keys and values are read once for all its continuations. A model on
        ``sdpa`` runs :data:`~lostmid.models.attention.GROUPED_SDPA` for the forward, told
        where each query's columns lie (:func:`~lostmid.models.attention.split_columns`):
        grouped key-value heads read in place, the context and each continuation's own
        columns attended apart; an ``eager`` model stays eager.

        Args:
            owners, positions: (K, W) the new tokens' continuation and position.
            seen: (owners, positions) (K, P) of the cached columns, in cache order.
            keep: the columns (indices into the W, the same for every row) whose logits
                are computed (all W when None); logits are (K, len(keep), V).
        """
        owner_k = torch.cat([seen[0], owners], dim=1)
        pos_k = torch.cat([seen[1], positions], dim=1)
        mine = (owner_k[:, None, :] == owners[:, :, None]) & (owners[:, :, None] >= 0)
        visible = (owner_k[:, None, :] == -1) | (
            mine & (pos_k[:, None, :] <= positions[:, :, None])
        )
        kwargs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": self.packed_masks(
                model, visible.to(ids.device), positions.to(ids.device), pos_k.to(ids.device)
            ),
            "position_ids": positions.to(ids.device),
            "use_cache": True,
            self.cache_argument(model): cache,
        }
        keep_name = logits_to_keep_name(model)
        if keep is not None and keep_name is not None:
            kwargs[keep_name] = keep.to(ids.device)
        kernel = getattr(model.config, "_attn_implementation", None)
        if kernel == "sdpa" and grouped_sdpa_available():
            # no copies of grouped key-value heads, and each query reads the context and
            # its own continuation's columns only, not the other continuations'
            kernel = GROUPED_SDPA
            split = split_columns(owner_k.to(ids.device), owners.to(ids.device))
            if split is not None:
                kwargs[SPLIT_KWARG] = split
        with attention_kernel(model, kernel) if kernel else contextlib.nullcontext():
            out = model(**kwargs)
        logits = out.logits
        if keep is not None and logits.shape[1] != len(keep):
            logits = logits[:, keep.to(logits.device)]
        return logits, output_cache(out), (owner_k, pos_k)

    @torch.no_grad()
    def continue_from(
        self,
        model: PreTrainedModel,
        cache: Any,
        ids: torch.Tensor,
        past: int | torch.Tensor,
        *,
        mask: torch.Tensor | None = None,
        keep: int | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """(logits, cache) of ``ids`` (B, W) read after the cached columns; ``cache``
        (B rows) is extended in place.

        Args:
            past: the number of cached columns, all real (an int), or their mask (B, P),
                1 real, 0 padding (after a left-padded continuation).
            mask: (B, W) 1 for a row's real new tokens, 0 for padding (default all real).
            keep: compute logits for the last ``keep`` columns only (default all W);
                the logits are (B, keep, V) either way.
        """
        batch, width = ids.shape
        if mask is None:
            mask = torch.ones_like(ids)
        if isinstance(past, int):
            past = torch.ones((batch, past), dtype=mask.dtype, device=ids.device)
        kwargs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": torch.cat([past, mask], dim=1),
            "use_cache": True,
            self.cache_argument(model): cache,
        }
        if self.takes_position_ids(model):
            seen = past.sum(dim=1, keepdim=True)  # (B, 1) real tokens before
            kwargs["position_ids"] = seen + (mask.cumsum(dim=1) - 1).clamp(min=0)
        keep_name = logits_to_keep_name(model)
        if keep is not None and keep_name is not None:
            kwargs[keep_name] = keep
        out = model(**kwargs)
        logits = out.logits
        if keep is not None and logits.shape[1] != keep:
            logits = logits[:, -keep:]
        return logits, output_cache(out)
