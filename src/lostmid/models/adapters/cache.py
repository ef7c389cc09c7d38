"""Continuing from a key-value cache: what a family needs to read more tokens after a
context it has already encoded (``retrieve --design shared``).

A context of T tokens is run once (:meth:`CacheContinuation.prefill`); its cache is
copied for a batch of B continuations (:meth:`~CacheContinuation.repeat_cache`: each
forward appends to the cache it is given, so the context's own is never handed out);
then W more tokens per row are read at positions T .. T + W - 1
(:meth:`~CacheContinuation.continue_from`), with an attention mask of ones over the
T + W columns. Rows of one call have the same W: a gap of padding between the context
and a row would count against a sliding window (Mistral, Gemma2), so callers group
continuations by length instead of padding them.

Family differences handled here, once: the cache argument's name (``cache`` in
Transformers >= 5, ``past_key_values`` before), whether the forward takes
``position_ids`` (BLOOM does not: ALiBi positions come from the attention mask), and
the cache's own batch operations (``batch_repeat_interleave`` of ``DynamicCache`` and its
sliding-window layers).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import torch
from torch import nn


def _accepts(model: nn.Module, name: str) -> bool:
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

    def cache_argument(self, model: nn.Module) -> str:
        """The forward's cache argument: ``cache`` (Transformers >= 5) or
        ``past_key_values``."""
        return "cache" if _accepts(model, "cache") else "past_key_values"

    def takes_position_ids(self, model: nn.Module) -> bool:
        """Whether the forward takes ``position_ids`` (else positions follow the mask)."""
        return _accepts(model, "position_ids")

    @torch.no_grad()
    def prefill(self, model: nn.Module, ids: torch.Tensor) -> Any:
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

    @torch.no_grad()
    def continue_from(
        self, model: nn.Module, cache: Any, ids: torch.Tensor, past: int
    ) -> tuple[torch.Tensor, Any]:
        """(logits (B, W, V), cache) of ``ids`` (B, W) read after ``past`` cached tokens
        at positions past .. past + W - 1; ``cache`` (B rows) is extended in place."""
        batch, width = ids.shape
        kwargs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": torch.ones(
                (batch, past + width), dtype=torch.long, device=ids.device
            ),
            "use_cache": True,
            self.cache_argument(model): cache,
        }
        if self.takes_position_ids(model):
            positions = torch.arange(past, past + width, device=ids.device)
            kwargs["position_ids"] = positions[None].expand(batch, width)
        out = model(**kwargs)
        return out.logits, output_cache(out)
