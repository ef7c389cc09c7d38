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

Family differences handled here, once: the cache argument's name (``cache`` in
Transformers >= 5, ``past_key_values`` before), whether the forward takes
``position_ids`` (BLOOM does not: ALiBi positions come from the attention mask), and
the cache's own batch operations (``batch_repeat_interleave`` of ``DynamicCache`` and its
sliding-window layers).
"""

from __future__ import annotations

import copy
import inspect
from typing import TYPE_CHECKING, Any

import torch

from lostmid.errors import UserError

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def _accepts(model: PreTrainedModel, name: str) -> bool:
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - exotic wrappers
        return False


def output_cache(output: Any) -> Any:
    """The cache a forward returned (``cache`` or ``past_key_values``)."""
    found = getattr(output, "cache", None)
    return found if found is not None else getattr(output, "past_key_values", None)


class CacheContinuation:
    """Prefill a context, copy its cache for a batch, continue from it (module doc)."""

    if TYPE_CHECKING:  # the adapter this mixes into (FamilyAdapter) defines it

        def layer_masks(self, config: Any, length: int) -> list[str]: ...

    def cache_argument(self, model: PreTrainedModel) -> str:
        """The forward's cache argument: ``cache`` (Transformers >= 5) or
        ``past_key_values``."""
        return "cache" if _accepts(model, "cache") else "past_key_values"

    def takes_position_ids(self, model: PreTrainedModel) -> bool:
        """Whether the forward takes ``position_ids`` (else positions follow the mask)."""
        return _accepts(model, "position_ids")

    @torch.no_grad()
    def prefill(self, model: PreTrainedModel, ids: torch.Tensor) -> Any:
        """Run a context ``ids`` (1, T) once; its key-value cache (only the last column of
        logits is computed where the family allows)."""
        kwargs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "use_cache": True,
        }
        for name in ("logits_to_keep", "num_logits_to_keep"):
            if _accepts(model, name):
                kwargs[name] = 1
                break
        if self.takes_position_ids(model):
            kwargs["position_ids"] = torch.arange(ids.shape[1], device=ids.device)[None]
        return output_cache(model(**kwargs))

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

    def packs_exactly(self, model: PreTrainedModel) -> bool:
        """Whether several continuations can be read after one cached context in a single
        row (:meth:`continue_packed`) with the numbers of separate rows: the forward takes
        ``position_ids`` and a custom 4D mask, positions are not derived from the mask
        (no ALiBi) and no layer has a sliding window (its cache and mask are built
        apart from ours). False for the generic adapter (masks unknown)."""
        config = model.config
        try:
            self.layer_masks(config, 1)
        except UserError:
            return False
        kinds = set(getattr(config, "layer_types", None) or ())
        window = getattr(config, "sliding_window", None)
        sliding = any("sliding" in str(k) for k in kinds) or (
            window is not None and bool(getattr(config, "use_sliding_window", True))
        )
        return (
            self.takes_position_ids(model)
            and not getattr(self, "has_alibi", False)
            and not (sliding)
        )

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
        """(logits, cache, seen) of W tokens ``ids`` (W,) of several continuations packed
        in one row after the cached columns; ``cache`` (batch 1) is extended in place.

        Each cached or new column has an owner (-1: the shared context, i: continuation
        i) and a position. A token sees a column when the column is the context's, or
        its own continuation's at a position not after its own: what it sees on a row
        of its own, so the numbers equal separate rows' (the test holds it to 1e-5),
        while the context's keys and values are read once for all continuations.

        Args:
            owners, positions: (W,) the new tokens' continuation and position.
            seen: (owners, positions) of the cached columns, in cache order.
            keep: the columns (indices into the W) whose logits are computed (all W
                when None).
        """
        owner_k = torch.cat([seen[0], owners])
        pos_k = torch.cat([seen[1], positions])
        visible = (owner_k[None, :] == -1) | (
            (owner_k[None, :] == owners[:, None]) & (pos_k[None, :] <= positions[:, None])
        )
        dtype = next(model.parameters()).dtype
        mask = torch.zeros(visible.shape, dtype=dtype, device=ids.device)
        mask.masked_fill_(~visible.to(ids.device), torch.finfo(dtype).min)
        kwargs: dict[str, Any] = {
            "input_ids": ids[None],
            "attention_mask": mask[None, None],
            "position_ids": positions[None].to(ids.device),
            "use_cache": True,
            self.cache_argument(model): cache,
        }
        keep_name = next(
            (n for n in ("logits_to_keep", "num_logits_to_keep") if _accepts(model, n)), None
        )
        if keep is not None and keep_name is not None:
            kwargs[keep_name] = keep.to(ids.device)
        out = model(**kwargs)
        logits = out.logits[0]
        if keep is not None and logits.shape[0] != len(keep):
            logits = logits[keep.to(logits.device)]
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
        keep_name = next(
            (n for n in ("logits_to_keep", "num_logits_to_keep") if _accepts(model, n)), None
        )
        if keep is not None and keep_name is not None:
            kwargs[keep_name] = keep
        out = model(**kwargs)
        logits = out.logits
        if keep is not None and logits.shape[1] != keep:
            logits = logits[:, -keep:]
        return logits, output_cache(out)
