"""The adapter contract: canonical places in a Hugging Face causal LM.

Vocabulary (used everywhere in :mod:`lostmid.influence`):

* ``token_embedding``: the token embedding table; its output at position j is the
  input embedding x_j that influence is measured against.
* ``blocks``: the H residual blocks, in order; the output of block l (1-indexed) is
  the residual stream after layer l.
* ``attention(block)``: the attention module of a block; its first output is the
  attention branch a_l, added to the block input x_l by the residual connection.
* ``final_norm``: the norm applied after the last block; its input is the residual
  stream before the final norm, its output the final hidden state.
* ``rotary`` / ``position_embedding``: the positional encodings that
  ``remove_rope`` / ``remove_position_embedding`` switch off.

The generic adapter serves any family through ``inputs_embeds`` and the model's own
output; features that need the places above say so in one line.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from lostmid.errors import UserError


class FamilyAdapter:
    """Generic adapter: the basic profile only (``inputs_embeds`` -> final hidden state)."""

    name = "generic"
    model_types: tuple[str, ...] = ()
    has_rope = False
    has_position_embedding = False

    def _needs_adapter(self, model: nn.Module, feature: str) -> UserError:
        from lostmid.models.adapters import ADAPTERS

        model_type = getattr(getattr(model, "config", None), "model_type", "?")
        known = ", ".join(sorted({t for a in ADAPTERS for t in a.model_types}))
        return UserError(
            f"{feature} needs a family adapter and model type {model_type!r} has none "
            f"(adapters exist for: {known}); the basic profile (--output hidden/logits/"
            "top1-prob) still works"
        )

    def token_embedding(self, model: nn.Module) -> nn.Module:
        """The token embedding table (any Hugging Face model)."""
        return model.get_input_embeddings()

    def base(self, model: nn.Module) -> nn.Module:
        """The decoder without the LM head; called with ``inputs_embeds``."""
        return model.base_model

    def lm_head(self, model: nn.Module) -> nn.Module:
        """The unembedding (hidden state -> logits)."""
        head = model.get_output_embeddings()
        if head is None:
            raise self._needs_adapter(model, "--output logits")
        return head

    def blocks(self, model: nn.Module) -> Sequence[nn.Module]:
        raise self._needs_adapter(model, "per-layer profiles, residual strength or checkpointing")

    def attention(self, block: nn.Module) -> nn.Module:
        raise self._needs_adapter(block, "residual strength")

    def final_norm(self, model: nn.Module) -> nn.Module:
        raise self._needs_adapter(model, "--output residual")

    def remove_rope(self, model: nn.Module) -> None:
        """Make rotary position embeddings the identity (cos = 1, sin = 0)."""
        raise self._needs_adapter(model, "--no-rope")

    def remove_position_embedding(self, model: nn.Module) -> None:
        """Remove learned absolute position embeddings (x_j + p_j -> x_j)."""
        raise self._needs_adapter(model, "--no-pos-emb")
