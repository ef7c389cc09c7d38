"""Adapters driven by a layout: the dotted attribute paths of the canonical places.

A family adapter is a :class:`Layout` plus what paths cannot say (fused query/key
weights, how to switch its positional encoding off). The same layouts let
:func:`~lostmid.models.adapters.adapter_for_model` place a model whose ``model_type``
no adapter names: a layout fits when every path resolves and it names every norm of
a block, so a block with a norm the layout does not know about is not guessed at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from lostmid.errors import UserError
from lostmid.models.adapters.base import FamilyAdapter, is_norm, mask_specs
from lostmid.models.shape import ModelShape

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel


def resolve_path(root: nn.Module, path: str) -> Any:
    """``root`` followed along a dotted attribute path (``""`` is ``root``); None if absent.

    >>> resolve_path(nn.Sequential(nn.Linear(2, 2)), "0.weight").shape
    torch.Size([2, 2])
    """
    node: Any = root
    for part in path.split(".") if path else ():
        node = getattr(node, part, None)
        if node is None:
            return None
    return node


def replace_module(root: nn.Module, old: nn.Module, new: nn.Module) -> None:
    """Put ``new`` wherever ``old`` is a child in the module tree under ``root``."""
    found = False
    for parent in root.modules():
        for name, child in list(parent.named_children()):
            if child is old:
                setattr(parent, name, new)
                found = True
    if not found:
        raise ValueError("module to replace is not in the model")


@dataclass(frozen=True)
class Layout:
    """Where the canonical places live (dotted attribute paths).

    ``base`` is relative to the causal LM; ``blocks``, ``final_norm``, ``rotary`` and
    ``position_embedding`` to the base; the rest to a block. An empty
    ``attention_out``/``mlp_out`` means the attention/MLP module itself.
    """

    base: str
    blocks: str
    final_norm: str
    attention: str
    attention_norm: str
    mlp: str
    mlp_norm: str | None
    attention_out: str = ""
    mlp_out: str = ""
    attention_post_norm: str | None = None
    mlp_post_norm: str | None = None
    rotary: str | None = None
    position_embedding: str | None = None

    def block_paths(self) -> list[str]:
        paths = [self.attention, self.attention_norm, self.mlp, self.attention_out, self.mlp_out]
        extra = (self.mlp_norm, self.attention_post_norm, self.mlp_post_norm)
        return paths + [p for p in extra if p is not None]

    def missing(self, model: nn.Module) -> str | None:
        """The first place this layout cannot find in ``model`` (a dotted path), else None."""
        base = resolve_path(model, self.base)
        if not isinstance(base, nn.Module):
            return self.base
        blocks = resolve_path(base, self.blocks)
        if not isinstance(blocks, nn.ModuleList) or len(blocks) == 0:
            return f"{self.base}.{self.blocks}"
        for path in (self.final_norm, self.rotary, self.position_embedding):
            if path is not None and resolve_path(base, path) is None:
                return f"{self.base}.{path}"
        block = blocks[0]
        prefix = f"{self.base}.{self.blocks}.0"
        for path in self.block_paths():
            if path and resolve_path(block, path) is None:
                return f"{prefix}.{path}"
        named = {resolve_path(block, p) for p in self.block_paths() if p}
        for name, child in block.named_children():
            if is_norm(child) and child not in named:
                return f"a place for the norm {prefix}.{name}"
        return None


class LayoutAdapter(FamilyAdapter):
    """An adapter whose places come from ``layout``; subclasses add the rest."""

    layout: Layout
    dropout: tuple[str, ...] = ()
    """The family's config keys of dropout probabilities; :meth:`build_config` sets them to 0."""

    def __init__(self) -> None:
        super().__init__(model_type=self.name)

    def unsupported(self, config: Any) -> str | None:
        """Why a model of this family with ``config`` is not served (a variant the
        layout does not describe), else None."""
        return None

    def config_kwargs(self, shape: ModelShape) -> dict[str, Any]:
        """The family's config keyword arguments for the sizes of ``shape``."""
        raise UserError(f"building a {self.name} model from a shape is not supported")

    def build_config(self, model_type: str, shape: ModelShape) -> PretrainedConfig:
        """The Hugging Face config of a ``model_type`` model of ``shape`` (dropout 0, no
        KV cache, the embeddings tied as ``shape`` says)."""
        from transformers import AutoConfig

        return AutoConfig.for_model(
            model_type,
            **self.config_kwargs(shape),
            **dict.fromkeys(self.dropout, 0.0),
            tie_word_embeddings=shape.tie_embeddings,
            use_cache=False,
        )

    def _get(self, root: nn.Module, path: str | None) -> Any:
        if path is None:
            return None
        found = resolve_path(root, path)
        if found is None:
            raise UserError(f"{self.name} adapter: the model has no {path!r}; is it a {self.name}?")
        return found

    def _base_place(self, model: PreTrainedModel, path: str | None) -> Any:
        return self._get(self.base(model), path)

    # ---- model level -------------------------------------------------------------
    def base(self, model: PreTrainedModel) -> nn.Module:
        return self._get(model, self.layout.base)

    def blocks(self, model: PreTrainedModel) -> Sequence[nn.Module]:
        return list(self._base_place(model, self.layout.blocks))

    def final_norm(self, model: PreTrainedModel) -> nn.Module:
        return self._base_place(model, self.layout.final_norm)

    def norms(self, model: nn.Module) -> list[nn.Module]:
        return [m for m in model.modules() if is_norm(m)]

    def layer_masks(self, config: Any, length: int) -> list[str]:
        return mask_specs(config, length)

    # ---- block level -------------------------------------------------------------
    def attention_norm(self, block: nn.Module) -> nn.Module:
        return self._get(block, self.layout.attention_norm)

    def attention(self, block: nn.Module) -> nn.Module:
        return self._get(block, self.layout.attention)

    def attention_out(self, block: nn.Module) -> nn.Module:
        return self._get(block, self.layout.attention_out or self.layout.attention)

    def attention_post_norm(self, block: nn.Module) -> nn.Module | None:
        return self._get(block, self.layout.attention_post_norm)

    def mlp_norm(self, block: nn.Module) -> nn.Module | None:
        return self._get(block, self.layout.mlp_norm)

    def mlp(self, block: nn.Module) -> nn.Module:
        return self._get(block, self.layout.mlp)

    def mlp_out(self, block: nn.Module) -> nn.Module:
        return self._get(block, self.layout.mlp_out or self.layout.mlp)

    def mlp_post_norm(self, block: nn.Module) -> nn.Module | None:
        return self._get(block, self.layout.mlp_post_norm)

    def parallel_residual(self, block: nn.Module) -> bool:
        return False

    def query_key(self, block: nn.Module) -> list[torch.Tensor]:
        """Separate ``q_proj``/``k_proj`` (weights and biases), and any q/k norms."""
        attn = self.attention(block)
        found: list[torch.Tensor] = []
        for name in ("q_proj", "k_proj", "q_layernorm", "k_layernorm", "q_norm", "k_norm"):
            part = getattr(attn, name, None)
            if part is None:
                continue
            for param_name in ("weight", "bias"):
                param = getattr(part, param_name, None)
                if param is not None:
                    found.append(param)
        if not found:
            raise UserError(
                f"{self.name} adapter: no query/key projections in {type(attn).__name__}"
            )
        return found

    # ---- positional-encoding switches ----------------------------------------------
    def _encoding(self) -> tuple[str, str]:
        """(what this family uses for positions, the flag that removes it)."""
        if self.has_rope:
            return "rotary embeddings", "--no-rope"
        if self.has_position_embedding:
            return "learned absolute positions", "--no-pos-emb"
        if self.has_alibi:
            return "ALiBi attention biases", "--no-alibi"
        return "no positional encoding", ""

    def _lacks(self, model: PreTrainedModel, what: str, flag: str) -> UserError:
        uses, other = self._encoding()
        model_type = getattr(getattr(model, "config", None), "model_type", self.name)
        hint = f"; use {other} instead of {flag}" if other else f"; drop {flag}"
        return UserError(f"{model_type} has no {what} to remove (it uses {uses}){hint}")

    def remove_rope(self, model: PreTrainedModel) -> None:
        if not self.has_rope:
            raise self._lacks(model, "rotary embeddings", "--no-rope")
        rotary = self._base_place(model, self.layout.rotary)
        if isinstance(rotary, IdentityRotary):
            return
        # the rotated dimensions (partial rotary too); Gemma 3 keeps one table per layer
        # type (sliding_attention_inv_freq, full_attention_inv_freq), all the same size
        inv_freq = next(b for n, b in rotary.named_buffers() if n.endswith("inv_freq"))
        dim = 2 * int(inv_freq.numel())
        replace_module(model, rotary, IdentityRotary(dim))

    def remove_position_embedding(self, model: PreTrainedModel) -> None:
        if not self.has_position_embedding:
            raise self._lacks(model, "learned position embeddings", "--no-pos-emb")
        # Zeroing the table makes the block input x_j + p_j = x_j at every position.
        with torch.no_grad():
            self._base_place(model, self.layout.position_embedding).weight.zero_()

    def remove_alibi(self, model: PreTrainedModel) -> None:
        raise self._lacks(model, "ALiBi biases", "--no-alibi")


class IdentityRotary(nn.Module):
    """Rotary embedding switched off: cos = 1, sin = 0, so q R = q and k R = k.

    ``dim`` is the number of rotated dimensions (the head size, or less for partial
    rotary); the output has the shape the family's rotary module returns.

    >>> cos, sin = IdentityRotary(4)(torch.zeros(1, 3, 8), torch.arange(3)[None])
    >>> cos.shape, float(cos.min()), float(sin.abs().max())
    (torch.Size([1, 3, 4]), 1.0, 0.0)
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(
        self, x: torch.Tensor, position_ids: torch.Tensor, layer_type: str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # layer_type: Gemma 3 asks for the table of a layer type; every type is identity
        shape = (*position_ids.shape, self.dim)  # (B or 1, L, dim)
        cos = torch.ones(shape, dtype=x.dtype, device=x.device)
        return cos, torch.zeros_like(cos)
