"""The adapter contract: one vocabulary for the places in a Hugging Face causal LM.

Every package names places in a model through an adapter, never through a family's
attribute names (TransformerLens-style: defined once, used everywhere). A block is
one residual layer; with x its input (the residual stream before layer l, 1-indexed)
a block computes, for the families served here,

* serial (``parallel_residual(block)`` False):
  h = x + a, a = post_a(Attn(norm_a(x)));  out = h + m, m = post_m(MLP(norm_m(h)));
* parallel (True): out = x + a + m, a = Attn(norm_a(x)), m = MLP(norm_m(x)), with
  norm_m = norm_a when the family shares one norm (``mlp_norm`` is then None).

Model-level places (argument: the whole ``...ForCausalLM``):

* ``token_embedding``: the token embedding table; its output at position j is the
  input embedding x_j that influence is measured against.
* ``base``: the decoder without the LM head, called with ``inputs_embeds``; its
  ``last_hidden_state`` is the output after the final norm.
* ``lm_head``: final hidden state -> the model's logits (with any soft-capping).
* ``blocks``: the H residual blocks in order; block l's output is the stream after layer l.
* ``final_norm``: the norm after the last block (its input is the residual stream).
* ``norms``: every normalisation module in the model (blocks, final, embedding norms).
* ``layer_masks(config, length)``: each layer's attention mask as a theory mask spec
  (``"causal"`` or ``"sliding:W"``, see :func:`lostmid.theory.masks.parse_mask`).

Block-level places (argument: one element of ``blocks``):

* ``attention_norm`` (norm_a): the norm before attention; input x, output the
  attention's input.
* ``attention``: the attention module (Hugging Face call signature; its second output
  holds the attention probabilities under eager attention with ``output_attentions``).
* ``attention_out``: the module whose output (first element when a tuple) is exactly
  the attention branch a added to the stream: the hook point for a.
* ``mlp_norm`` (norm_m): the norm before the MLP; None when parallel families share
  ``attention_norm``.
* ``mlp``: the MLP as a function of its normed input, h -> MLP(h) (before any
  post-norm). Where the family inlines the MLP in the block (OPT) or passes the
  residual into it (BLOOM), this is a view that is not in the module tree: hook
  ``mlp_norm``/``mlp_out`` instead.
* ``mlp_out``: the module whose output is exactly the MLP branch m: the hook point for m
  (OPT computes its MLP on flattened positions: reshape (B L, d) to (B, L, d)).
* ``attention_post_norm`` / ``mlp_post_norm`` (post_a, post_m): norms applied to a
  branch before the residual addition (Gemma2), else None.
* ``parallel_residual``: whether the block is parallel (see above).
* ``query_key``: the parameter tensors (or views into fused ones) that make the
  queries and keys; zero them and q.k = 0, so attention is uniform under the mask.

Positional encodings: ``has_rope``, ``has_position_embedding``, ``has_alibi`` say what a
family uses, and each switch removes all position dependence it is named for:
``remove_rope`` (rotary: cos = 1, sin = 0), ``remove_position_embedding`` (learned
absolute table x_j + p_j -> x_j), ``remove_alibi`` (ALiBi bias -> 0).

Caches (``prefill``, ``repeat_cache``, ``continue_from``; :mod:`.cache`): encode a
context once and read more tokens after it, for every family.

Building: ``build_config(model_type, shape)`` is the family's Hugging Face config for a
:class:`~lostmid.models.shape.ModelShape` (what training builds its models from).

The generic adapter (this class) serves any family through ``inputs_embeds`` and the
model's own output; features that need the places above fail with one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.models.adapters.cache import CacheContinuation
from lostmid.models.shape import ModelShape

if TYPE_CHECKING:
    from transformers import PretrainedConfig


def is_norm(module: nn.Module) -> bool:
    """Whether ``module`` is a normalisation layer (a LayerNorm, an RMSNorm variant,
    any class whose name ends in ``Norm``)."""
    return isinstance(module, nn.LayerNorm) or type(module).__name__.endswith("Norm")


def mask_specs(config: Any, length: int) -> list[str]:
    """Each layer's mask spec from a config's ``layer_types`` / ``sliding_window``.

    ``layer_types`` (one entry per layer) says which layers slide; without it a set
    ``sliding_window`` applies to every layer (Mistral). A window W >= length is the
    causal mask. HF's sliding window lets position i see i-W+1..i, as ``sliding:W`` does.

    >>> from types import SimpleNamespace
    >>> mask_specs(SimpleNamespace(num_hidden_layers=3, sliding_window=4,
    ...     layer_types=["sliding_attention", "full_attention", "sliding_attention"]), 16)
    ['sliding:4', 'causal', 'sliding:4']
    >>> mask_specs(SimpleNamespace(num_hidden_layers=2, sliding_window=32), 16)
    ['causal', 'causal']
    """
    if length < 1:
        raise UserError(f"length must be >= 1, got {length}")
    layers = int(config.num_hidden_layers)
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    if types is None:
        types = ["sliding_attention" if window else "full_attention"] * layers
    specs = []
    for kind in types:
        if kind == "full_attention":
            specs.append("causal")
        elif kind == "sliding_attention" and window:
            specs.append(f"sliding:{window}" if window < length else "causal")
        else:
            raise UserError(f"attention layer type {kind!r} has no theory mask; use a causal model")
    return specs


class FamilyAdapter(CacheContinuation):
    """Generic adapter: the basic profile only (``inputs_embeds`` -> final hidden state),
    and continuing from a key-value cache (:mod:`~lostmid.models.adapters.cache`).

    ``model_type`` and ``reason`` (why no family adapter serves the model) go into the
    one-line error of every feature that needs one.
    """

    name = "generic"
    model_types: tuple[str, ...] = ()
    has_rope = False
    has_position_embedding = False
    has_alibi = False

    def __init__(self, model_type: str = "?", reason: str = "") -> None:
        self.model_type = model_type
        self.reason = reason

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def _needs_adapter(self, feature: str) -> UserError:
        why = self.reason or "no family adapter names it"
        return UserError(
            f"{feature} needs a family adapter and model type {self.model_type!r} has none "
            f"({why}); the basic profile (--output hidden/logits/top1-prob) still works"
        )

    # ---- model level -------------------------------------------------------------
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
            raise self._needs_adapter("--output logits")
        return head

    def blocks(self, model: nn.Module) -> Sequence[nn.Module]:
        """The H residual blocks, in order."""
        raise self._needs_adapter("per-layer profiles, residual strength or checkpointing")

    def final_norm(self, model: nn.Module) -> nn.Module:
        """The norm after the last block."""
        raise self._needs_adapter("--output residual")

    def norms(self, model: nn.Module) -> list[nn.Module]:
        """Every normalisation module of the model, in module-tree order."""
        raise self._needs_adapter("norm ablations")

    def layer_masks(self, config: Any, length: int) -> list[str]:
        """Each layer's attention mask spec at sequence length ``length``."""
        raise self._needs_adapter("per-layer masks")

    # ---- block level -------------------------------------------------------------
    def attention_norm(self, block: nn.Module) -> nn.Module:
        """The norm before attention."""
        raise self._needs_adapter("per-layer gains")

    def attention(self, block: nn.Module) -> nn.Module:
        """The attention module of a block."""
        raise self._needs_adapter("residual strength")

    def attention_out(self, block: nn.Module) -> nn.Module:
        """The module whose output is the attention branch added to the stream."""
        raise self._needs_adapter("residual strength")

    def attention_post_norm(self, block: nn.Module) -> nn.Module | None:
        """The norm on the attention branch before the residual addition, if any."""
        raise self._needs_adapter("per-layer gains")

    def mlp_norm(self, block: nn.Module) -> nn.Module | None:
        """The norm before the MLP; None when it is ``attention_norm`` (parallel)."""
        raise self._needs_adapter("MLP gains")

    def mlp(self, block: nn.Module) -> nn.Module:
        """The MLP as a function h -> MLP(h) of its normed input."""
        raise self._needs_adapter("MLP gains")

    def mlp_out(self, block: nn.Module) -> nn.Module:
        """The module whose output is the MLP branch added to the stream."""
        raise self._needs_adapter("MLP ablations")

    def mlp_post_norm(self, block: nn.Module) -> nn.Module | None:
        """The norm on the MLP branch before the residual addition, if any."""
        raise self._needs_adapter("MLP gains")

    def parallel_residual(self, block: nn.Module) -> bool:
        """Whether attention and MLP both read the block input (out = x + a + m)."""
        raise self._needs_adapter("per-layer gains")

    def query_key(self, block: nn.Module) -> list[torch.Tensor]:
        """Parameters (or views of fused ones) that make the queries and keys."""
        raise self._needs_adapter("uniform attention")

    def build_config(self, model_type: str, shape: ModelShape) -> PretrainedConfig:
        """The Hugging Face config of a ``model_type`` model of ``shape`` (for training)."""
        raise self._needs_adapter(f"building a {model_type} model")

    # ---- positional-encoding switches ----------------------------------------------
    def remove_rope(self, model: nn.Module) -> None:
        """Make rotary position embeddings the identity (cos = 1, sin = 0)."""
        raise self._needs_adapter("--no-rope")

    def remove_position_embedding(self, model: nn.Module) -> None:
        """Remove learned absolute position embeddings (x_j + p_j -> x_j)."""
        raise self._needs_adapter("--no-pos-emb")

    def remove_alibi(self, model: nn.Module) -> None:
        """Remove the ALiBi attention bias (scores q.k - m (i - j) -> q.k)."""
        raise self._needs_adapter("--no-alibi")
